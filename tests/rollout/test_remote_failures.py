"""An eval on a remote server that dies mid-run: the lost episodes are flagged, counted apart by
kind, and a resume with ``--retry-failures`` plays exactly them again. An environment's own
connection timing out is told apart from the episode's deadline."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from omnienv.client import AsyncWebSocketClient, connect
from omnienv.core import Observation, SessionLostError, State, StepResult, ToolCall
from omnienv.envs.wordle.responder import wordle_responder
from omnienv.rollout import EpisodePlan, read_episodes
from omnienv.rollout.loop import arun_episode
from omnienv.rollout.scripted_openai import Faults, create_app
from omnienv.rollout.trajectory import Episode
from omnienv.server import running
from tests.net import free_port
from tests.polling import eventually, wait_healthy
from tests.server.conftest import serve

EPISODES = 16
__all__ = ["serve"]  # the servers' fixture: real servers on free ports, stopped at test end


@contextmanager
def wordle_server(port: int) -> Iterator[subprocess.Popen[str]]:
    command = [sys.executable, "-m", "omnienv.cli.main", "serve", "wordle", "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process)
        yield process
    finally:
        process.kill()
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()


def eval_command(model: str, port: int, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "omnienv.cli.main",
        "eval",
        "wordle",
        "--model",
        "scripted",
        "--base-url",
        model,
        "--url",
        f"http://127.0.0.1:{port}",
        "--split",
        "test",
        "--episodes",
        str(EPISODES),
        "--concurrency",
        "4",
        "--out",
        str(out),
        *extra,
    ]


def test_a_server_killed_mid_eval_voids_its_episodes_and_a_retry_plays_exactly_them(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    port = free_port()
    environ = {**os.environ, "COLUMNS": "200"}
    # each model reply takes a little while, so the kill lands with episodes in flight
    with running(create_app(wordle_responder, faults=Faults(stall_every=1, stall_s=0.05))) as model:
        with wordle_server(port) as server:
            run = subprocess.Popen(
                eval_command(f"{model}/v1", port, out),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=environ,
            )
            try:
                deadline = time.monotonic() + 120
                while not (out.exists() and out.read_bytes().count(b"\n") >= 2):
                    assert run.poll() is None, "the eval ended before the server could be killed"
                    assert time.monotonic() < deadline, "no episode was written in time"
                    time.sleep(0.02)
                server.kill()
                output, _ = run.communicate(timeout=120)
            finally:
                run.kill()
                run.wait(30)
        assert run.returncode == 0, output
        before = {e.index: e for e in read_episodes(out)}
        assert sorted(before) == list(range(EPISODES))
        failed = {i for i, e in before.items() if e.failure is not None}
        assert failed and len(failed) < EPISODES
        assert {before[i].failure.kind for i in failed} == {"session_lost"}  # type: ignore[union-attr]
        assert all(before[i].success is None for i in failed)  # never scored, never a loss
        summary = orjson.loads((tmp_path / "run.summary.json").read_bytes())
        assert summary["failures"] == len(failed) and summary["scored"] == EPISODES - len(failed)
        assert summary["failure_kinds"] == {"session_lost": len(failed)}
        assert f"{len(failed)} (session_lost {len(failed)})" in output
        assert "--retry-failures to play them again" in output

        with wordle_server(port):
            again = subprocess.run(
                eval_command(f"{model}/v1", port, out, "--retry-failures"),
                capture_output=True,
                text=True,
                timeout=300,
                env=environ,
            )
    assert again.returncode == 0, again.stdout + again.stderr
    after = {e.index: e for e in read_episodes(out)}
    assert sorted(after) == list(range(EPISODES)) and all(e.failure is None for e in after.values())
    # the kept episodes are the first run's, untouched; only the failed ones were played again
    assert all(after[i].to_dict() == before[i].to_dict() for i in set(before) - failed)
    summary = orjson.loads((tmp_path / "run.summary.json").read_bytes())
    assert summary["failures"] == 0 and summary["failure_kinds"] == {} and summary["success_rate"] == 1.0
    assert "--retry-failures" not in again.stdout


class _TimesOut:
    """An environment of its own making (no omnienv server) whose connection times out mid-episode."""

    name = "times-out"

    async def reset(self, task: object = None, seed: int | None = None) -> Observation:
        return Observation.of("ready")

    async def step(self, call: ToolCall) -> StepResult:
        raise TimeoutError("the simulator did not answer")

    async def end(self) -> StepResult:
        raise AssertionError("not reached")

    async def state(self) -> State:
        return State(None, 0)

    async def close(self) -> None:
        pass


class _Pinger:
    name = "pinger"

    async def act(self, episode: Episode) -> ToolCall:
        return ToolCall("ping")


@pytest.mark.parametrize("deadline_s", [None, 60.0])
def test_an_environment_timing_out_is_flagged_as_its_own_failure_not_the_episode_deadline(
    deadline_s: float | None,
) -> None:
    async def play() -> Episode:
        return await arun_episode(_TimesOut(), _Pinger(), EpisodePlan(0, None, 0), deadline_s=deadline_s)  # type: ignore[arg-type]

    episode = asyncio.run(play())
    assert episode.failure is not None and episode.failure.kind == "transport"
    assert "the simulator did not answer" in episode.failure.message


def test_an_eval_wider_than_the_server_stops_naming_both_fixes_and_leaves_no_session(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    url, manager = serve("wordle", max_sessions=2)
    with running(create_app(wordle_responder, faults=Faults(stall_every=1, stall_s=0.05))) as model:
        command = eval_command(f"{model}/v1", 0, tmp_path / "run.jsonl")
        command[command.index("--url") + 1] = url
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "400"}
        )
    assert result.returncode != 0
    message = " ".join((result.stdout + result.stderr).split())
    assert "--max-sessions" in message and "lower --concurrency" in message, message
    eventually(lambda: manager.used == 0, 10, "the eval's sessions closed")


def test_a_stalled_server_loses_its_sessions_to_the_clients_ping_and_refuses_new_ones() -> None:
    """README: a stalled server's episodes are voided as ``session_lost`` within the client's ping
    interval plus its timeout (20 s + 20 s: what ``omnienv eval --url`` connects with), and each
    later episode that cannot connect is flagged the same way. Here with pings of half a second."""
    defaults = inspect.signature(AsyncWebSocketClient.__init__).parameters
    assert defaults["ping_interval"].default + defaults["ping_timeout"].default == 40.0
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with wordle_server(port) as server:

        async def stall() -> tuple[BaseException, BaseException]:
            client = await connect(url, ping_interval=0.5, ping_timeout=0.5)
            try:
                await client.reset(seed=1)
                server.send_signal(signal.SIGSTOP)
                with pytest.raises(SessionLostError) as lost:
                    await asyncio.wait_for(client.step(ToolCall("guess", {"word": "crane"})), 60)
                with pytest.raises(SessionLostError) as refused:
                    await asyncio.wait_for(connect(url, connect_timeout=1.0), 60)
                return lost.value, refused.value
            finally:
                server.send_signal(signal.SIGCONT)
                await client.close()

        lost, refused = asyncio.run(stall())
    assert "cannot connect" in str(refused) and "cannot connect" not in str(lost), (lost, refused)
