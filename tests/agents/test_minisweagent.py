"""mini-swe-agent, the real package in its own virtualenv, solves shipped terminal tasks through the runner.

Its model is the scripted OpenAI-compatible endpoint (vLLM's token fields from its own tokeniser),
replaying each task's ``solution/solve.sh`` one bash tool call per turn, then mini-swe-agent's
submit command; before the solution it probes the sandbox. What must hold, per episode: the
task's verifier gives 1.0; mini-swe-agent ended by submitting (its own trajectory says so); every
model call was captured token for token into a trainable record; and its commands ran in the
sandbox: every port listening on 127.0.0.1 during the run (the runner's own server among them) is
refused from there, and the project checkout and the virtualenv do not exist there.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from omnienv.agents import MiniSweAgent, run_agents
from omnienv.agents.minisweagent import SUBMIT_MARKER
from omnienv.agents.runner import AgentRun
from omnienv.capture import read_records
from omnienv.envs.terminal import Terminal
from omnienv.rollout import read_episodes
from omnienv.rollout.scripted_openai import Produced, create_app
from omnienv.server import running
from tests.agents.scripted import checkout_probe, listening_ports, network_probe, replay_responder, shell_actions
from tests.peerenv import ROOT, peer_python

EPISODES = 5


def chosen_tasks() -> list[str]:
    """One task of each kind (text, csv, git, logs, pkg...), by id: five different workspaces."""
    firsts: dict[str, str] = {}
    for task in sorted(Terminal.tasks("train") + Terminal.tasks("test"), key=lambda task: task.id.split("/")[1]):
        firsts.setdefault(task.id.split("/")[1].split("-")[0], task.id)
    assert len(firsts) >= EPISODES, firsts
    return sorted(firsts.values())[:EPISODES]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AgentRun, list[Produced], Path, Path]]:
    python = peer_python("minisweagent")
    harbor = Terminal.harbor_tasks()
    scripts = {
        harbor[task.split("/")[1]].instruction: shell_actions(
            (harbor[task.split("/")[1]].path / "solution" / "solve.sh").read_text()
        )
        for task in chosen_tasks()
    }
    probes = [checkout_probe([ROOT, Path(sys.prefix)])]
    responder = replay_responder(scripts, lambda: [network_probe(listening_ports()), *probes], f"echo {SUBMIT_MARKER}")
    upstream = create_app(responder)
    folder = tmp_path_factory.mktemp("mini")
    out, records = folder / "mini.jsonl", folder / "mini.records.jsonl"
    with running(upstream) as model:
        run = run_agents(
            MiniSweAgent(str(python)),
            "terminal",
            model="scripted",
            base_url=f"{model}/v1",
            tasks=chosen_tasks(),
            episodes=EPISODES,
            concurrency=3,
            timeout_s=240,
            out=out,
            records=records,
            workdir=folder / "work",
        )
    yield run, list(upstream.state.produced), out, records


def test_solves_five_terminal_tasks_by_submitting(played: tuple[AgentRun, list[Produced], Path, Path]) -> None:
    run = played[0]
    assert sorted(item.episode.task_id or "" for item in run.episodes) == chosen_tasks()
    for item in run.episodes:
        assert item.episode.failure is None and item.episode.reward == 1.0, (item.episode.failure, item.harness)
        assert item.episode.success is True
        assert item.harness["stopped"] == "exited" and item.harness["exit_code"] == 0
        assert item.harness["submitted"] and item.harness["outcome"]["exit_status"] == "Submitted"
        assert item.episode.steps[-1].call.name == "submit"  # ended by the agent, not cut by the runner
    assert run.summary.mean_reward == 1.0 and run.summary.failures == 0


def test_model_calls_are_captured_token_exact(played: tuple[AgentRun, list[Produced], Path, Path]) -> None:
    run, produced = played[0], played[1]
    calls = [call for item in run.episodes for call in item.record.calls]
    made = sorted((tuple(p.prompt_token_ids), tuple(p.completion_token_ids), tuple(p.logprobs)) for p in produced)
    seen = [
        (tuple(c.prompt_token_ids or ()), tuple(c.completion_token_ids or ()), tuple(c.logprobs or ())) for c in calls
    ]
    assert len(calls) == len(produced) and sorted(seen) == made  # exactly what the server sampled
    for item in run.episodes:
        record = item.record
        assert record.reward == 1.0 and record.trainable and record.segments is not None
        assert len(record.segments) == 1  # mini-swe-agent keeps its whole history: one sequence
        assert record.calls and len(record.calls) == item.harness["outcome"]["api_calls"]
        generated = sum(len(call.completion_token_ids or ()) for call in record.calls)
        assert sum(record.segments[0].loss_mask) == generated


def test_commands_run_in_the_sandbox(played: tuple[AgentRun, list[Produced], Path, Path]) -> None:
    run = played[0]
    server_port = urlsplit(run.server_url).port
    for item in run.episodes:
        network, checkout = (step.result.observation.text for step in item.episode.steps[:2])
        tried = [int(line.split()[1]) for line in network.splitlines() if line.startswith(("OPEN", "CLOSED"))]
        assert server_port in tried and "OPEN" not in network, network
        assert network.count("ConnectionRefusedError") == len(tried)
        assert "No such file or directory" in checkout and "[exit code 2]" in checkout
        assert "pyproject.toml" not in checkout and "activate" not in checkout


def test_files_hold_one_line_and_one_record_per_episode(played: tuple[AgentRun, list[Produced], Path, Path]) -> None:
    run, _, out, records = played
    lines = read_episodes(out)
    assert sorted(line.task_id or "" for line in lines) == chosen_tasks()
    assert all(line.reward == 1.0 and len(line.model_calls or ()) > 0 for line in lines)
    kept = list(read_records(records))
    assert sorted(record.task_id or "" for record in kept) == chosen_tasks()
    assert [record.to_json() for record in kept] == [item.record.to_json() for item in run.episodes]


def test_litellm_stays_offline(played: tuple[AgentRun, list[Produced], Path, Path]) -> None:
    """No price-list fetch, no other request: LiteLLM's own warnings would say so in the harness's log."""
    logs = sorted((played[2].parent / "work").glob("episode-*/harness.log"))
    assert len(logs) == EPISODES
    for log in logs:
        text = log.read_text()
        assert "Saved trajectory" in text
        assert "cost map" not in text and "ConnectError" not in text and "ProxyError" not in text, text[-2000:]
