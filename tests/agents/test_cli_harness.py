"""An agent CLI described by a harness spec, its shell the shim: ``omnienv agent run SPEC ENV``.

The agent (``cli_agent/agent.py``, a real program using the ``openai`` package) runs each command
the model proposes with ``$SHELL -c``; the runner's shim sends it to the episode's sandbox. It plays
a terminal task through the ``omnienv agent run`` command itself, and a jupyter task whose answer it
submits with its marker (the relay turns the marker into ``final_answer``). The outcomes the runner
attributes are checked here too: a harness that crashes or runs out of time is scored as the
workspace stands (and everything it started is reaped), one that never reaches its model is
flagged, and so is an environment that fails under it.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnienv.agents import load_spec, run_agents
from omnienv.agents.runner import AgentEpisode
from omnienv.capture import read_records
from omnienv.core import Environment, Task, tool
from omnienv.envs.jupyter.solutions import solution
from omnienv.envs.jupyter.tasks import jupyter_tasks
from omnienv.envs.terminal import Terminal
from omnienv.rollout import read_episodes
from omnienv.rollout.scripted_openai import Faults, Responder, create_app
from omnienv.rollout.trajectory import TRAINER_END as END
from omnienv.server import ServerConfig, assemble, running
from tests.agents.scripted import replay_responder, shell_actions
from tests.peerenv import ROOT

SPEC = Path(__file__).parent / "cli_agent" / "harness.toml"
SUBMIT = "echo TINY_AGENT_DONE"
TASK = "text-word-frequency"


def terminal_task() -> tuple[str, dict[str, list[str]]]:
    harbor = Terminal.harbor_tasks()[TASK]
    return f"{harbor.split}/{harbor.id}", {
        harbor.instruction: shell_actions((harbor.path / "solution/solve.sh").read_text())
    }


@pytest.fixture
def model() -> Iterator[str]:
    _, scripts = terminal_task()
    with running(create_app(replay_responder(scripts, lambda: [], SUBMIT))) as url:
        yield f"{url}/v1"


def test_omnienv_agent_run_plays_a_terminal_task_through_the_shim(tmp_path: Path, model: str) -> None:
    task_id, _ = terminal_task()
    out, records = tmp_path / "tiny.jsonl", tmp_path / "tiny.records.jsonl"
    command = [sys.executable, "-m", "omnienv.cli.main", "agent", "run", str(SPEC), "terminal"]
    command += ["--model", "scripted", "--base-url", model, "--task", task_id]
    command += ["--out", str(out), "--records", str(records), "--workdir", str(tmp_path / "work")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "mean reward" in done.stdout and "1.0000" in done.stdout and "harness ends: exited: 1" in done.stdout, (
        done.stdout + done.stderr
    )
    (line,) = read_episodes(out)
    assert line.reward == 1.0 and line.failure is None and line.policy == "tiny-agent"
    commands = [step.call.arguments.get("command") for step in line.steps]
    assert commands[-2:] == [SUBMIT, None]  # the marker, then the submit tool it stands for
    assert line.steps[-1].call.name == "submit" and all(step.call.name in ("run", "submit") for step in line.steps)
    (record,) = read_records(records)
    assert record.reward == 1.0 and record.trainable and len(record.calls) == len(line.steps) - 1
    printed = (tmp_path / "work" / "episode-0" / "harness.log").read_text()
    assert "[exit 0]" in printed and "TINY_AGENT_DONE" in printed  # what the agent itself saw


def test_a_shell_only_agent_submits_a_jupyter_answer_with_its_marker(tmp_path: Path) -> None:
    task = next(t for t in jupyter_tasks("test") if solution(t.data["family"], t.data["params"])[0] == "shell")
    _, source = solution(task.data["family"], task.data["params"])
    scripts = {task.data["question"]: [source, f"printf '%s\\n' TINY_AGENT_DONE '{task.answer}'"]}
    with running(create_app(replay_responder(scripts, lambda: [], SUBMIT))) as url:
        run = run_agents(load_spec(SPEC), "jupyter", model="scripted", base_url=f"{url}/v1", tasks=[task.id])
    (item,) = run.episodes
    names = [step.call.name for step in item.episode.steps]
    assert names == ["execute_shell_command", "execute_shell_command", "final_answer"]
    assert "ANSWER:" in item.episode.steps[0].result.observation.text
    assert item.episode.steps[-1].call.arguments == {"answer": str(task.answer)}
    assert item.episode.success is True and item.episode.reward > 1.0 and item.record.reward == item.episode.reward


def running_process(pid: int) -> bool:
    """Whether ``pid`` is a live process (a killed one whose parent has not reaped it yet is dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _play(
    model: str, tmp_path: Path, timeout_s: float | None = None, url: str | None = None
) -> tuple[AgentEpisode, str]:
    task_id, _ = terminal_task()
    spec = load_spec(SPEC)
    run = run_agents(
        spec,
        "terminal",
        model="scripted",
        base_url=model,
        tasks=[task_id],
        workdir=tmp_path,
        timeout_s=timeout_s,
        url=url,
    )
    assert url is None or run.server_url == url
    (item,) = run.episodes
    return item, (tmp_path / "episode-0" / "harness.log").read_text()


def test_a_harness_that_crashes_is_scored_as_the_workspace_stands(
    tmp_path: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINY_CRASH_AFTER", "1")
    app = assemble(Terminal, ServerConfig(ui=False), plugins=())
    with running(app) as server:  # sessions on a server of the caller's (--url)
        item, _ = _play(model, tmp_path, url=server)
        assert app.state.manager.active == 0  # the runner closed its session
    assert item.harness["stopped"] == "exited" and item.harness["exit_code"] == 3
    episode = item.episode
    assert episode.failure is None and episode.reward == 0.0 and episode.steps[-1].call.name == END
    assert episode.steps[-1].result.info["ended_by"] == "trainer"
    assert item.record.reward == 0.0 and len(item.record.calls) == 1


def test_a_harness_past_its_time_is_stopped_with_its_children(
    tmp_path: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINY_HANG_AFTER", "1")
    item, log = _play(model, tmp_path, timeout_s=10.0)  # time enough to start and make one call, even on a busy machine
    assert item.harness["stopped"] == "timeout" and item.harness["exit_code"] is not None, item.harness
    assert item.episode.failure is None and item.episode.reward == 0.0, (item.episode.failure, log)
    assert len(item.record.calls) == 1
    child = int(log.split("child ")[1].split()[0])
    assert not running_process(child)  # the sleep it left behind died with it


def test_a_harness_stopped_while_its_command_runs_is_scored_with_that_command(tmp_path: Path) -> None:
    """The harness is killed mid-command: the command is recorded, then the episode is ended and
    scored. Ending it at once found the session busy, and voided the episode."""
    instruction = Terminal.harbor_tasks()[TASK].instruction
    with running(create_app(replay_responder({instruction: ["sleep 15"]}, lambda: [], SUBMIT))) as url:
        item, log = _play(f"{url}/v1", tmp_path, timeout_s=10.0)
    assert item.harness["stopped"] == "timeout", item.harness
    episode = item.episode
    assert episode.failure is None and episode.reward == 0.0, (episode.failure, log)
    assert [step.call.name for step in episode.steps] == ["run", END]
    assert episode.steps[0].call.arguments["command"] == "sleep 15"


def test_a_harness_that_never_reaches_its_model_is_flagged(tmp_path: Path, model: str) -> None:
    spec = tmp_path / "broken.toml"
    spec.write_text('command = ["{python}", "-c", "import sys; sys.exit(5)"]\n')
    run = run_agents(load_spec(spec), "terminal", model="scripted", base_url=model, tasks=[terminal_task()[0]])
    (item,) = run.episodes
    assert item.episode.failure is not None and item.episode.failure.kind == "harness"
    assert "exit 5" in item.episode.failure.message and item.record.reward is None
    assert run.summary.failures == 1 and run.summary.scored == 0
    script = tmp_path / "agent.sh"
    script.write_text("echo never run\n")  # there, but not executable: the harness cannot start
    spec.write_text('command = ["{spec_dir}/agent.sh"]\n')
    run = run_agents(load_spec(spec), "terminal", model="scripted", base_url=model, tasks=[terminal_task()[0]])
    (item,) = run.episodes
    assert item.harness["stopped"] == "not_started" and "Permission denied" in item.harness["error"]
    assert item.episode.failure is not None and item.episode.failure.kind == "harness"


def test_a_harness_stopped_by_its_model_servers_failure_is_flagged(tmp_path: Path) -> None:
    """The model server answers the first call, then fails (500): the agent stops on the error, and
    that is the infrastructure's doing, not a loss to score 0."""
    task_id, scripts = terminal_task()
    with running(create_app(replay_responder(scripts, lambda: [], SUBMIT), Faults(error_every=2))) as url:
        run = run_agents(load_spec(SPEC), "terminal", model="scripted", base_url=f"{url}/v1", tasks=[task_id])
    (item,) = run.episodes
    assert item.harness["stopped"] == "exited" and item.harness["exit_code"] == 1
    assert item.episode.failure is not None and item.episode.failure.kind == "model", item.episode.failure
    assert "answered 500" in item.episode.failure.message and item.record.reward is None
    assert len(item.record.calls) == 1 and run.summary.failures == 1 and run.summary.scored == 0


class Brittle(Environment):
    """A shell that runs nothing (it echoes) and breaks on "boom": an environment failing mid-episode."""

    name = "brittle"

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "Break the brittle shell."

    @tool
    def run(self, command: str) -> str:
        """Echo a command.

        Args:
            command: The command line.
        """
        if "boom" in command:
            raise RuntimeError("the brittle shell broke")
        return f"{command}\n[exit code 0]"


def brittle_model() -> Responder:
    return replay_responder({"Break the brittle shell.": ["true", "boom", "true"]}, lambda: [], SUBMIT)


def test_an_environment_that_fails_under_the_harness_is_flagged(tmp_path: Path) -> None:
    with running(create_app(brittle_model())) as url:
        run = run_agents(load_spec(SPEC), Brittle, model="scripted", base_url=f"{url}/v1", workdir=tmp_path)
    (item,) = run.episodes
    assert item.episode.failure is not None and item.episode.failure.kind == "env_error"
    assert [step.call.arguments["command"] for step in item.episode.steps] == ["true", "boom"]
    assert item.record.reward is None and item.record.failure == item.episode.failure
    assert item.harness["stopped"] == "exited"
    log = (tmp_path / "episode-0" / "harness.log").read_text()
    # the agent was told its shell is gone; the episode is over, so its next model call is refused
    assert "the episode is void\n[exit 126]" in log and "404 - capture proxy: no such episode" in log, log


def test_the_marker_in_an_environment_without_a_submit_tool_ends_it_for_the_runner_to_score(tmp_path: Path) -> None:
    """EchoShell has a shell tool and no submit tool (its output is the command, so the command
    ``TINY_AGENT_DONE`` prints the marker): the harness submitted, and the episode is the runner's
    cut, scored as it stands (docs/agents.md, "Submitting")."""
    from tests.agents.test_hostile_harness import EchoShell

    responder = replay_responder({"Echo.": ["true"]}, lambda: [], "TINY_AGENT_DONE")
    with running(create_app(responder)) as url:
        run = run_agents(load_spec(SPEC), EchoShell, model="scripted", base_url=f"{url}/v1", workdir=tmp_path)
    (item,) = run.episodes
    assert item.harness["submitted"] is True and item.harness["stopped"] == "exited"
    episode = item.episode
    assert [step.call.name for step in episode.steps] == ["run", "run", END] and episode.truncated
    assert episode.failure is None and episode.steps[-1].result.info["ended_by"] == "trainer"
    assert len(item.record.calls) == 2 and item.record.reward == episode.reward == 0.0
