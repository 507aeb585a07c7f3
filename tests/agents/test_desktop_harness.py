"""``omnienv agent run`` on the desktop: an agent CLI solves a desktop task by shell commands alone.

The desktop's shell tool is ``run_command``, and its submit tool is ``terminate(status)``: the
harness-spec agent (``cli_agent/``) runs each command the scripted model proposes with ``$SHELL
-c``, so each one reaches ``run_command`` in the desktop session's sandbox on a real Xvfb display.
The command itself (``omnienv agent run``) runs under a subreaper (``subreaper.py``) with its own
temp dir, for two episodes: one whose model probes the sandbox, writes the task's file and submits
(the marker becomes ``terminate("success")``: reward 1.0, ended by the agent), and one whose model
lists the home and stops (the runner's ``end()`` scores it 0, cut by the trainer). What must hold:
the rewards and how each episode ended, that the commands ran in the sandbox (not on the host:
the file is in the desktop's home only), that every model call was captured token for token, and
that nothing the run started (Xvfb, bwrap, the harnesses) or wrote in its temp dir is left.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from omnienv.capture import TrainingRecord, read_records
from omnienv.envs.desktop.tasks import find_task
from omnienv.rollout import read_episodes
from omnienv.rollout.scripted_openai import Produced, create_app
from omnienv.rollout.trajectory import TRAINER_END, Episode
from omnienv.server import running
from tests.agents.scripted import checkout_probe, listening_ports, network_probe, replay_responder
from tests.peerenv import ROOT

SPEC = Path(__file__).parent / "cli_agent" / "harness.toml"
SUBMIT = "echo TINY_AGENT_DONE"
WIN, LOSE = "train/terminal-echo", "train/make-directory"
SOLUTION = "echo hello-rl > hello.txt"  # terminal-echo's check: ~/hello.txt holds hello-rl
WHERE = 'pwd; echo "$HOME"'
CHECKOUT = checkout_probe([ROOT, Path(sys.prefix)])  # fails with stderr: the desktop's "STDERR: ...", then its code
MISSING = f"test -e {ROOT}"  # fails with no output: the desktop's "(exit code 1)"
RUN_S = 180


@dataclass
class Played:
    lines: dict[str, Episode]
    harness: dict[str, dict[str, Any]]
    records: dict[str, TrainingRecord]
    produced: list[Produced]
    report: dict[str, Any]
    stdout: str
    temp: Path
    work: Path
    model_port: int


def probes() -> list[str]:
    """Made at the first model call: every port listening then (the runner's server, proxy, relay
    and this model among them), the working directory and home, the checkout and the virtualenv."""
    return [network_probe(listening_ports()), WHERE, CHECKOUT, MISSING]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    folder = tmp_path_factory.mktemp("desktop-agent")
    temp = Path(tempfile.mkdtemp(prefix="oj-agent-desktop-"))  # the run's TMPDIR: its sandboxes go here
    out, records, work, report = folder / "d.jsonl", folder / "d.records.jsonl", folder / "work", folder / "left.json"
    winner = replay_responder({find_task(WIN).instruction: [SOLUTION]}, probes, SUBMIT)
    loser = replay_responder({find_task(LOSE).instruction: []}, lambda: [], "ls")  # looks, then answers without a call
    upstream = create_app(lambda messages: winner(messages) or loser(messages))
    try:
        with running(upstream) as model:
            command = [sys.executable, "-m", "tests.agents.subreaper", str(report), str(RUN_S), "--"]
            command += [sys.executable, "-m", "omnienv.cli.main", "agent", "run", str(SPEC), "desktop"]
            command += ["--model", "scripted", "--base-url", f"{model}/v1", "--task", WIN, "--task", LOSE]
            command += ["--episodes", "2", "--out", str(out), "--records", str(records), "--workdir", str(work)]
            env = {**os.environ, "TMPDIR": str(temp), "OMNIENV_DESKTOP_POOL": "0", "COLUMNS": "200"}
            done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_S + 30, cwd=ROOT, env=env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        raw = [json.loads(line) for line in out.read_text().splitlines()]
        yield Played(
            {line.task_id or "": line for line in read_episodes(out)},
            {line["task_id"]: line["harness"] for line in raw},
            {record.task_id or "": record for record in read_records(records)},
            list(upstream.state.produced),
            json.loads(report.read_text()),
            done.stdout,
            temp,
            work,
            urlsplit(model).port or 0,
        )
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def test_a_shell_only_agent_solves_a_desktop_task_and_submits(played: Played) -> None:
    line, harness = played.lines[WIN], played.harness[WIN]
    assert line.failure is None and line.reward == 1.0 and line.success is True, (line.failure, harness)
    commands = [step.call.arguments.get("command") for step in line.steps]
    assert commands[1:] == [WHERE, CHECKOUT, MISSING, SOLUTION, SUBMIT, None] and "PROBE" in str(commands[0])
    assert {step.call.name for step in line.steps[:-1]} == {"run_command"}
    # the marker became the desktop's submit tool: ended by the agent, scored by the desktop's check
    last = line.steps[-1]
    assert last.call.name == "terminate" and last.call.arguments == {"status": "success"}
    assert last.result.info["success"] is True and line.done and not line.truncated
    assert harness["stopped"] == "exited" and harness["exit_code"] == 0 and harness["submitted"] is True
    assert "mean reward" in played.stdout and "harness ends: exited: 2" in played.stdout, played.stdout
    # the prompt says "call screenshot ... end with terminate": the harness was told it has neither
    asked = str(played.records[WIN].calls[0].request)
    assert find_task(WIN).instruction in asked and "(screenshot, cursor_position," in asked, asked
    assert "(what the task calls terminate), run `echo TINY_AGENT_DONE`." in asked, asked


def test_a_harness_that_stops_without_submitting_is_scored_as_the_desktop_stands(played: Played) -> None:
    line, harness = played.lines[LOSE], played.harness[LOSE]
    assert line.failure is None and line.reward == 0.0, (line.failure, harness)
    assert [(step.call.name, step.call.arguments.get("command")) for step in line.steps] == [
        ("run_command", "ls"),
        (TRAINER_END, None),
    ]
    info = line.steps[-1].result.info
    assert line.truncated and info["ended_by"] == "trainer" and info["rubric"] == {"task_completed": 0.0}, info
    assert harness["stopped"] == "exited" and harness["exit_code"] == 0 and harness["submitted"] is False


def test_the_commands_ran_in_the_desktop_sandbox_not_on_the_host(played: Played) -> None:
    network, where, checkout, missing = (step.result.observation.text for step in played.lines[WIN].steps[:4])
    tried = [int(text.split()[1]) for text in network.splitlines() if text.startswith(("OPEN", "CLOSED"))]
    assert played.model_port in tried and len(tried) >= 4 and "OPEN" not in network, network
    assert network.count("ConnectionRefusedError") == len(tried)
    assert where.split() == ["/home/user", "/home/user"]  # the session's home, not the harness's
    assert "No such file or directory" in checkout and "pyproject.toml" not in checkout and "activate" not in checkout
    # the file the check found in the desktop's home is not where a command run on the host would
    # have written it: the harness's working directory (the episode's) and its HOME (in there)
    episode = played.work / "episode-0"
    assert (episode / "home").is_dir() and not list(played.work.rglob("hello.txt"))
    # what the agent itself saw: each command's output and exit code, as a shell gives them
    log = (episode / "harness.log").read_text()
    assert f"$ {MISSING}\n[exit 1]" in log and f"$ {SOLUTION}\n[exit 0]" in log, log
    checked = log.split(f"$ {CHECKOUT}\n")[1].split("\n$ ")[0]
    assert missing == "\n(exit code 1)" and checked.endswith("[exit 2]"), checked  # ls's own code


def test_every_model_call_is_captured_token_exact(played: Played) -> None:
    calls, produced = [call for record in played.records.values() for call in record.calls], played.produced
    made = sorted((tuple(p.prompt_token_ids), tuple(p.completion_token_ids), tuple(p.logprobs)) for p in produced)
    seen = [
        (tuple(c.prompt_token_ids or ()), tuple(c.completion_token_ids or ()), tuple(c.logprobs or ())) for c in calls
    ]
    assert len(calls) == len(played.produced) and sorted(seen) == made  # exactly what the server sampled
    for task, record in played.records.items():
        line = played.lines[task]
        assert record.reward == line.reward and record.trainable and record.segments is not None
        assert len(record.segments) == 1  # the agent keeps its whole history: one sequence
        generated = sum(len(call.completion_token_ids or ()) for call in record.calls)
        assert sum(record.segments[0].loss_mask) == generated
        assert len(line.model_calls or ()) == len(record.calls)
    # one call per command; the winner's last answer was its marker, the loser's had no command
    assert len(played.records[WIN].calls) == len(played.lines[WIN].steps) - 1
    assert len(played.records[LOSE].calls) == 2


def test_nothing_the_run_started_or_wrote_is_left(played: Played) -> None:
    assert played.report["returncode"] == 0
    assert played.report["left"] == []  # no X server, sandbox or harness outlived the command
    assert list(played.temp.iterdir()) == []  # the displays' sandboxes (homes, sockets) are gone
