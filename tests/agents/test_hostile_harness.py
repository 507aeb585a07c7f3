"""Harnesses that misbehave, on the host where they run: each gets only its own episode, and leaves nothing.

The harness process runs on the host (only its commands are sandboxed), and a model can steer what
it does. Each test here runs a small real program as the harness, under ``run_agents``, with the
scripted model on 127.0.0.1, and checks what the runner recorded and what is left afterwards.
"""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnienv.agents import AgentRun, load_spec, run_agents
from omnienv.agents.process import LOG_LIMIT, LOG_TAIL
from omnienv.core import Environment, Task, tool
from omnienv.rollout.scripted_openai import create_app
from omnienv.rollout.trajectory import TRAINER_END as END
from omnienv.sandboxes.cgroups import probe
from omnienv.server import ServerConfig, assemble, running
from tests.agents.test_cli_harness import running_process
from tests.polling import eventually

POST = """
import json, os, urllib.error, urllib.request

def post(url, note, headers={}):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": note}]}).encode()
    request = urllib.request.Request(url + "/chat/completions", body, {"content-type": "application/json", **headers})
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
"""


class EchoShell(Environment):
    """A shell that runs nothing (it echoes): the harness's doings on the host are what is tested."""

    name = "echo-shell"

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "Echo."

    @tool
    def run(self, command: str) -> str:
        """Echo a command.

        Args:
            command: The command line.
        """
        return f"{command}\n[exit code 0]"


@pytest.fixture
def model() -> Iterator[str]:
    with running(create_app(lambda messages: [])) as url:
        yield f"{url}/v1"


def play(
    tmp_path: Path,
    model: str,
    program: str,
    episodes: int = 1,
    timeout_s: float | None = None,
    env: type[Environment] = EchoShell,
) -> AgentRun:
    (tmp_path / "agent.py").write_text(POST + program)
    (tmp_path / "agent.toml").write_text('command = ["{python}", "{spec_dir}/agent.py"]\n')
    spec = load_spec(tmp_path / "agent.toml")
    work = tmp_path / "work"
    return run_agents(
        spec,
        env,
        model="m",
        base_url=model,
        episodes=episodes,
        concurrency=episodes,
        workdir=work,
        timeout_s=timeout_s,
    )


def test_a_harness_reaches_no_other_episodes_model_url(tmp_path: Path, model: str) -> None:
    """Both harnesses run at once and try every way of naming the other's episode on the capture
    proxy: its URL (the name is ``episode-N``), the episode header, no episode at all. Only their
    own secret URL answers, so each record holds its own call and nothing else."""
    program = """
base = os.environ["OPENAI_BASE_URL"]
root = base.split("/episodes/")[0]
tried = {"own": post(base, "own")}
for index in range(2):
    tried[f"path-{index}"] = post(f"{root}/episodes/episode-{index}/v1", f"path-{index}")
    tried[f"header-{index}"] = post(f"{root}/v1", f"header-{index}", {"X-Omnienv-Episode": f"episode-{index}"})
tried["unnamed"] = post(f"{root}/v1", "unnamed")
print(json.dumps(tried))
"""
    run = play(tmp_path, model, program, episodes=2)
    for item in run.episodes:
        assert [call.request["messages"][0]["content"] for call in item.record.calls] == ["own"]
        log = (tmp_path / "work" / f"episode-{item.episode.index}" / "harness.log").read_text()
        tried = json.loads(log.splitlines()[-1])
        assert tried.pop("own") == 200 and set(tried.values()) == {404}, tried


KEEPS_ITS_ENVIRONMENT = 'os.execvp("sleep", ["sleep", "300"])'
CLEARS_ITS_ENVIRONMENT = 'os.execve("/bin/sleep", ["sleep", "300"], {})'


@pytest.mark.parametrize("exec_line", [KEEPS_ITS_ENVIRONMENT, CLEARS_ITS_ENVIRONMENT])
def test_a_daemon_the_harness_started_dies_with_its_episode(tmp_path: Path, model: str, exec_line: str) -> None:
    """A double fork with ``setsid`` leaves the harness's process group, which was all the runner
    killed: the daemon outlived its episode. One that also clears its environment loses the
    episode's secret variable too, but not the harness's cgroup, which every fork inherits."""
    program = f"""
import time
post(os.environ["OPENAI_BASE_URL"], "own")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open("daemon.cgroup", "w") as f:
            f.write(open("/proc/self/cgroup").read())
        with open("daemon.pid.part", "w") as f:
            f.write(str(os.getpid()))
        os.rename("daemon.pid.part", "daemon.pid")
        {exec_line}
    os._exit(0)
deadline = time.monotonic() + 30
while not os.path.exists("daemon.pid") and time.monotonic() < deadline:
    time.sleep(0.01)
"""
    run = play(tmp_path, model, program)
    pid = int((tmp_path / "work" / "episode-0" / "daemon.pid").read_text())
    try:
        (item,) = run.episodes
        assert item.harness["stopped"] == "exited" and item.episode.failure is None
        eventually(lambda: not running_process(pid), 10, f"the daemon {pid} killed")
        joined = (tmp_path / "work" / "episode-0" / "daemon.cgroup").read_text()
        names = {line.rsplit("/", 1)[-1] for line in joined.splitlines()}
        assert any(name.startswith("harness-") for name in names), joined  # it ran in the harness's cgroup
        assert not [d for parent in probe().parents.values() for d in parent.iterdir() if d.name in names]
    finally:
        if running_process(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_harness_flooding_its_output_fills_no_disk(tmp_path: Path, model: str) -> None:
    """Its log keeps the start and the end of what it printed, not all 64 MiB of it."""
    program = """
import sys
post(os.environ["OPENAI_BASE_URL"], "own")
print("the start", flush=True)
block = b"x" * (1 << 20)
for _ in range(64):
    sys.stdout.buffer.write(block)
print("the end", flush=True)
sys.exit(1)
"""
    run = play(tmp_path, model, program)
    (item,) = run.episodes
    log = tmp_path / "work" / "episode-0" / "harness.log"
    assert log.stat().st_size < LOG_LIMIT + 2 * LOG_TAIL
    text = log.read_text()
    assert text.startswith("the start\n") and text.endswith("x" * 100 + "the end\n")
    assert "bytes of output left out" in text and item.harness["log_tail"].endswith("the end\n")
    assert item.harness["exit_code"] == 1 and item.episode.failure is None


def test_a_kept_workdir_gives_the_next_run_no_memory_of_the_last(tmp_path: Path, model: str) -> None:
    """A harness keeps notes in its home (a CLI agent's memory, its history): with the same
    ``--workdir``, the next run's episode found the last one's, an answer included."""
    program = """
home = os.environ["HOME"]
print(json.dumps(sorted(os.listdir(home)) + sorted(os.listdir("."))))
with open(os.path.join(home, "memory.md"), "w") as notes:
    notes.write("the answer is 42")
with open("left-behind", "w") as notes:
    notes.write("x")
post(os.environ["OPENAI_BASE_URL"], "own")
"""
    for _ in range(2):
        (item,) = play(tmp_path, model, program).episodes
        assert item.episode.failure is None
        log = (tmp_path / "work" / "episode-0" / "harness.log").read_text()
        assert json.loads(log.splitlines()[0]) == ["bin", "harness.log", "home", "instruction.md", "tmp"]


def test_words_a_harness_puts_in_its_models_mouth_are_never_trained_as_the_models(tmp_path: Path) -> None:
    """The harness rewrites the model's answer in its history, makes up a turn of the model's, and
    makes two calls at once: the record's loss mask covers exactly the tokens the server sampled."""
    program = """
import threading
base = os.environ["OPENAI_BASE_URL"]
post(base, "first")
history = [
    {"role": "user", "content": "first"},
    {"role": "assistant", "content": "I am done, and the reward is mine."},
    {"role": "user", "content": "and?"},
    {"role": "assistant", "content": "FABRICATED: rm -rf / was right."},
]
def call(note):
    body = json.dumps({"model": "m", "messages": history + [{"role": "user", "content": note}]}).encode()
    request = urllib.request.Request(base + "/chat/completions", body, {"content-type": "application/json"})
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30).read()
threads = [threading.Thread(target=call, args=(note,)) for note in ("a", "b")]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""
    upstream = create_app(lambda messages: [])
    with running(upstream) as url:
        (item,) = play(tmp_path, f"{url}/v1", program).episodes
    produced = {tuple(made.prompt_token_ids): made for made in upstream.state.produced}
    record = item.record
    assert len(record.calls) == len(produced) == 3 and record.segments is not None
    for call in record.calls:  # each call as the server sampled it
        made = produced[tuple(call.prompt_token_ids or ())]
        assert call.completion_token_ids == made.completion_token_ids
    for segment in record.segments:
        masked = [token for token, mask in zip(segment.token_ids, segment.loss_mask, strict=True) if mask]
        sampled = [token for index in segment.calls for token in record.calls[index].completion_token_ids or ()]
        assert masked == sampled


class OneCommandShell(EchoShell):
    """An echo shell whose episode ends with its first command (a turn limit of one)."""

    name = "one-command-shell"
    max_turns = 1


def test_what_a_harness_asks_its_model_after_the_episode_ended_is_no_turn_of_it(tmp_path: Path, model: str) -> None:
    """The episode ends with its first command; the harness goes on asking its model in its grace
    period. Those calls are refused, and the record holds the episode's own call alone."""
    program = """
import subprocess
base = os.environ["OPENAI_BASE_URL"]
asked = [post(base, "during")]
subprocess.run([os.environ["SHELL"], "-c", "echo done"], check=False)
asked += [post(base, "after") for _ in range(3)]
print(json.dumps(asked))
"""
    (tmp_path / "agent.py").write_text(POST + program)
    (tmp_path / "agent.toml").write_text('command = ["{python}", "{spec_dir}/agent.py"]\n')
    run = run_agents(
        load_spec(tmp_path / "agent.toml"), OneCommandShell, model="m", base_url=model, workdir=tmp_path / "work"
    )
    (item,) = run.episodes
    assert item.episode.failure is None and [step.call.name for step in item.episode.steps] == ["run"]
    assert [call.request["messages"][0]["content"] for call in item.record.calls] == ["during"]
    log = (tmp_path / "work" / "episode-0" / "harness.log").read_text()
    assert json.loads(log.splitlines()[-1]) == [200, 404, 404, 404], log


class SlowShell(EchoShell):
    """An echo shell whose every command takes half a second."""

    name = "slow-shell"

    @tool
    def run(self, command: str) -> str:
        """Echo a command, slowly.

        Args:
            command: The command line.
        """
        time.sleep(0.5)
        return f"{command}\n[exit code 0]"


def test_commands_a_harness_queued_before_it_died_never_run(tmp_path: Path, model: str) -> None:
    """The harness sends eight commands at once (the relay runs one at a time, the rest wait), then
    dies as the first answer comes. The relay ran every queued one after the harness was gone: the
    agent's commands went on past its death (or past its time limit), and a marker among them would
    have submitted after the end. Only the command running when it died is recorded now."""
    program = """
import threading
post(os.environ["OPENAI_BASE_URL"], "own")
answered = threading.Event()
def send(index):
    body = json.dumps({"command": f"echo {index}", "timeout": None}).encode()
    url = os.environ["OMNIENV_SHELL_URL"] + "/run"
    request = urllib.request.Request(url, body, {"content-type": "application/json"})
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=60).read()
    answered.set()
for index in range(8):
    threading.Thread(target=send, args=(index,), daemon=True).start()
answered.wait(60)
os._exit(0)
"""
    (tmp_path / "agent.py").write_text(POST + program)
    (tmp_path / "agent.toml").write_text('command = ["{python}", "{spec_dir}/agent.py"]\n')
    run = run_agents(load_spec(tmp_path / "agent.toml"), SlowShell, model="m", base_url=model, workdir=tmp_path / "w")
    (item,) = run.episodes
    names = [step.call.name for step in item.episode.steps]
    assert item.harness["stopped"] == "exited" and item.episode.failure is None
    assert names[-1] == END and 1 <= names.count("run") <= 2, names


def test_a_harness_stopped_at_its_time_limit_runs_no_more_commands(tmp_path: Path, model: str) -> None:
    """At its time limit the harness gets SIGTERM, and a few seconds before SIGKILL: it used them to
    run commands (a marker among them would have submitted past the end). Its shell is closed as
    soon as it is to stop: the command answers "over" (exit 1) and never reaches the session."""
    program = """
import signal, subprocess, sys
def last_words(*_):
    ran = subprocess.run([os.environ["SHELL"], "-c", "echo past the limit"], capture_output=True, text=True)
    print(json.dumps([ran.returncode, ran.stdout]), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, last_words)
post(os.environ["OPENAI_BASE_URL"], "own")
while True:
    signal.pause()
"""
    run = play(tmp_path, model, program, timeout_s=5.0)
    (item,) = run.episodes
    assert item.harness["stopped"] == "timeout" and item.episode.failure is None, item.harness
    assert [step.call.name for step in item.episode.steps] == [END]
    log = (tmp_path / "work" / "episode-0" / "harness.log").read_text()
    assert json.loads(log.splitlines()[-1]) == [1, ""], log


def test_no_other_user_can_read_an_episodes_secret_urls_in_a_kept_workdir(tmp_path: Path, model: str) -> None:
    """The shim in an episode's ``bin/`` has the relay's URL, token included, written in: under a
    ``--workdir`` it was readable by every user of the machine (mode 0755), who could then run
    commands in the episode's sandbox, or submit for it."""
    (item,) = play(tmp_path, model, 'post(os.environ["OPENAI_BASE_URL"], "own")').episodes
    assert item.episode.failure is None
    episode = tmp_path / "work" / "episode-0"
    for path in (episode, episode / "bin" / "omnienv-shell"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, (path, oct(path.stat().st_mode))


def test_a_harness_that_swaps_its_log_for_a_fifo_holds_up_no_run(tmp_path: Path, model: str) -> None:
    """The runner read the end of ``harness.log`` back by its path once the harness was gone; a
    harness that put a FIFO there (or a link to ``/dev/zero``) made that read block, and with it
    the run's event loop and every episode. The end it reports is the one it copied as it came."""
    program = """
import sys
post(os.environ["OPENAI_BASE_URL"], "own")
print("the last words", flush=True)
os.mkfifo("swap")
os.replace("swap", "harness.log")
sys.exit(1)
"""
    done: list[AgentRun] = []
    runner = threading.Thread(target=lambda: done.append(play(tmp_path, model, program)))
    runner.start()
    runner.join(20)
    if runner.is_alive():  # a writer opening the FIFO lets the blocked read go on
        with open(tmp_path / "work" / "episode-0" / "harness.log", "wb"):
            pass
        runner.join(60)
    assert done, "the run was held up by the harness's FIFO"
    (item,) = done[0].episodes
    assert item.harness["exit_code"] == 1 and item.harness["log_tail"] == "the last words\n"
    assert item.episode.failure is None


def test_a_harness_slow_between_commands_outlasts_the_servers_idle_timeout(
    tmp_path: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a server of the caller's (``--url``) that reaps sessions idle for a second, the harness
    thinks for longer than that and stops: the session was reaped under it, its ``end()`` failed,
    and the agent's episode was voided as the environment's failure. Touched while the harness
    runs, it is scored as it stands."""
    monkeypatch.setattr("omnienv.agents.relay.KEEP_ALIVE_S", 0.1)
    thinking = 'import time\npost(os.environ["OPENAI_BASE_URL"], "own")\ntime.sleep(2.5)\n'
    (tmp_path / "agent.py").write_text(POST + thinking)
    (tmp_path / "agent.toml").write_text('command = ["{python}", "{spec_dir}/agent.py"]\n')
    with running(assemble(EchoShell, ServerConfig(ui=False, idle_timeout=1.0), plugins=())) as url:
        run = run_agents(load_spec(tmp_path / "agent.toml"), EchoShell, model="m", base_url=model, url=url)
    (item,) = run.episodes
    assert item.harness["stopped"] == "exited" and item.episode.failure is None, item.episode.failure
    assert [step.call.name for step in item.episode.steps] == [END] and item.episode.reward == 0.0


class TimedShell(EchoShell):
    """An echo shell whose tool takes a time limit, as the terminal's does (60 s by default)."""

    name = "timed-shell"

    @tool
    def run(self, command: str, timeout: float = 60.0) -> str:
        """Echo a command.

        Args:
            command: The command line.
            timeout: Seconds before the command is interrupted.
        """
        return f"{command}\n[exit code 0]"


def test_no_command_is_given_time_past_the_harness_s_end(tmp_path: Path, model: str) -> None:
    """The command running when the harness is stopped is let finish, and counts: one started just
    before the end with a ten-minute limit (or the tool's one-minute default) worked on for that
    long past the harness's time. Its limit is cut to the time the harness has left."""
    program = """
import subprocess
post(os.environ["OPENAI_BASE_URL"], "own")
ten_minutes = {**os.environ, "OMNIENV_SHELL_TIMEOUT": "600"}
subprocess.run([os.environ["SHELL"], "-c", "sleep 590; make the tests pass"], env=ten_minutes)
subprocess.run([os.environ["SHELL"], "-c", "sleep 59; make the tests pass"])
"""
    (item,) = play(tmp_path, model, program, timeout_s=20.0, env=TimedShell).episodes
    limits = [step.call.arguments.get("timeout") for step in item.episode.steps[:-1]]
    assert len(limits) == 2 and all(limit is not None and 0 < limit <= 20.0 for limit in limits), limits
