"""The clients against real servers: the contract over the wire, typed errors, dead connections."""

from __future__ import annotations

import asyncio
import contextlib
import resource
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from omnienv.client import (
    AsyncHTTPClient,
    AsyncWebSocketClient,
    HTTPClient,
    WebSocketClient,
    acheck_url,
    check_url,
    connect,
)
from omnienv.core import (
    AsyncEnv,
    CapacityError,
    EpisodeOverError,
    NotResetError,
    SessionLostError,
    SessionNotFoundError,
    StepTimeoutError,
    TaskError,
    ToolCall,
    UsageError,
    acheck_env,
)
from omnienv.envs.wordle import Wordle
from omnienv.rollout import EpisodePlan, arun_episodes, make_policy
from tests.net import free_port
from tests.polling import eventually
from tests.server.conftest import RELEASE, Crash, Hang, on_loop

ANSWER = Wordle.task_index().find("test/0005", "test").answer
SYNC = [WebSocketClient, HTTPClient]
ASYNC = [AsyncWebSocketClient, AsyncHTTPClient]


def test_the_contract_checks_pass_over_the_websocket(serve) -> None:
    url, manager = serve("wordle")
    report = check_url(url)
    assert report.ok, report.failures
    assert len(report.results) >= 9
    assert manager.active == 0  # every checked session was closed


def test_the_contract_checks_pass_over_http_sessions(serve) -> None:
    url, manager = serve("wordle")
    report = asyncio.run(acheck_env(lambda: AsyncHTTPClient.connect(url), target=url))
    assert report.ok, report.failures
    assert manager.active == 0


def test_the_remote_checks_can_fail(serve) -> None:
    url, _ = serve(Crash)
    report = asyncio.run(acheck_url(url))
    assert not report.ok
    assert any("kaboom" in result.message for result in report.failures)


@pytest.mark.parametrize("client_class", SYNC)
def test_sync_clients_play_wordle_to_a_win(serve, client_class) -> None:
    url, manager = serve("wordle")
    with client_class.connect(url) as env:
        assert env.name == "wordle" and set(env.tools) == {"guess", "get_history"}
        assert env.tools["guess"].parameters["required"] == ["word"]
        with pytest.raises(NotResetError):
            env.step(ToolCall("guess", {"word": "crane"}))
        assert "Wordle" in env.reset(task="test/0005").text
        mistake = env.step(ToolCall("guess", {"word": 5}))
        assert mistake.observation.is_error and mistake.info["error"]["code"] == "INVALID_ARGUMENTS"
        won = env.step(ToolCall("guess", {"word": ANSWER}))
        assert won.done and not won.truncated and won.reward > 1 and won.info["success"] is True
        with pytest.raises(EpisodeOverError):
            env.step(ToolCall("guess", {"word": "crane"}))
        assert env.state().task_id == "test/0005"
        with pytest.raises(TaskError, match="no task"):
            env.reset(task="test/9999")
        env.close()
        env.close()
        with pytest.raises(NotResetError, match="closed"):
            env.step(ToolCall("guess", {"word": "crane"}))
        env.reset(seed=1)  # a closed client opens a new session on reset
        assert env.state().step_count == 0
        local = Wordle()
        for split in ("train", "test"):  # the split a seed draws from, as the in-process reset takes it
            env.reset(seed=7, split=split)
            local.reset(seed=7, split=split)
            assert local.task is not None and env.state().task_id == local.task.id and local.task.split == split
    assert manager.active == 0


@pytest.mark.parametrize("url", [5, None, "http://[::1", "localhost:8000"])
@pytest.mark.parametrize("client_class", SYNC + ASYNC)
def test_a_malformed_url_is_refused_naming_the_form_of_one(client_class, url) -> None:
    with pytest.raises(UsageError, match=r"expected a server URL like http://127\.0\.0\.1:8000"):
        client_class(url)


@pytest.mark.parametrize("client_class", SYNC)
def test_a_step_given_what_is_not_a_tool_call_is_refused_as_in_process_and_the_episode_goes_on(
    serve, client_class
) -> None:
    url, _ = serve("wordle")
    with client_class.connect(url) as env:
        env.reset(task="test/0005")
        with pytest.raises(UsageError, match=r"step\(\) takes a ToolCall, not str 'guess crane'.*ToolCall\('guess'"):
            env.step("guess crane")
        with pytest.raises(UsageError, match=r"cannot be sent as JSON .*set.*: a tool call's arguments may hold"):
            env.step(ToolCall("guess", {"word": {"crane"}}))
        assert env.step(ToolCall("guess", {"word": "crane"})).observation.text.startswith("CRANE")


@pytest.mark.parametrize("client_class", ASYNC)
def test_async_clients_have_the_asyncenv_face(serve, client_class) -> None:
    url, manager = serve("wordle")

    async def play() -> None:
        env: AsyncEnv = await client_class.connect(url)
        try:
            await env.reset(task="test/0005", seed=3)
            result = await env.step(ToolCall("guess", {"word": ANSWER}))
            assert result.done and result.reward > 1
            assert (await env.state()).step_count == 1
        finally:
            await env.close()

    asyncio.run(play())
    assert manager.active == 0


def test_the_rollout_loop_runs_over_the_wire(serve) -> None:
    url, manager = serve("wordle")
    plans = [EpisodePlan(i, f"test/{i:04d}", i) for i in range(8)]

    async def run() -> list:
        return [
            e async for e in arun_episodes(lambda: connect(url), make_policy("solver", Wordle), plans, concurrency=4)
        ]

    episodes = asyncio.run(run())
    assert len(episodes) == 8
    assert all(e.failure is None and e.steps[-1].result.done for e in episodes)
    eventually(lambda: manager.active == 0, timeout=2, what="the workers' sessions closed")


@pytest.mark.parametrize("client_class", SYNC)
def test_capacity_is_a_typed_error(serve, client_class) -> None:
    url, _ = serve("wordle", max_sessions=1)
    with client_class.connect(url):
        with pytest.raises(CapacityError, match="Server at capacity: 1/1") as refused:
            client_class.connect(url)
        assert refused.value.details["max_sessions"] == 1


def test_async_capacity_is_a_typed_error(serve) -> None:
    url, _ = serve("wordle", max_sessions=1)

    async def scenario() -> None:
        async with AsyncWebSocketClient(url):
            with pytest.raises(CapacityError):
                await connect(url)

    asyncio.run(scenario())


def test_a_hung_step_raises_step_timeout_and_the_client_recovers(serve) -> None:
    url, _ = serve(Hang, step_timeout=1.0)
    with WebSocketClient.connect(url) as env:
        env.reset()
        with pytest.raises(StepTimeoutError, match="deadline"):
            env.step(ToolCall("hang"))
        assert env.state().truncated
        with pytest.raises(EpisodeOverError):
            env.step(ToolCall("ping"))
        env.reset()
        assert env.step(ToolCall("ping")).observation.text == "pong"


def test_a_reaped_session_is_lost_or_not_found(serve) -> None:
    url, manager = serve("wordle", idle_timeout=60)

    async def reap_everything_idle() -> int:
        return await manager.reap_idle(time.monotonic() + 3600)  # as if an hour had passed

    with WebSocketClient.connect(url) as ws_env, HTTPClient.connect(url) as http_env:
        ws_env.reset()
        http_env.reset()
        assert on_loop(manager, reap_everything_idle) == 2
        with pytest.raises(SessionLostError, match=r"idle for more than 60 s \(the server's --idle-timeout\)"):
            ws_env.step(ToolCall("guess", {"word": "crane"}))
        with pytest.raises(SessionNotFoundError):
            http_env.step(ToolCall("guess", {"word": "crane"}))
        # either client's next reset opens a new session and plays on
        for env in (ws_env, http_env):
            env.reset(seed=3)
            assert env.step(ToolCall("get_history")).observation.text.endswith("0/6")
        assert on_loop(manager, reap_everything_idle) == 2


def test_an_http_reset_after_a_reap_opens_a_new_session(serve) -> None:
    url, manager = serve("wordle", idle_timeout=60)

    async def reap_everything_idle() -> int:
        return await manager.reap_idle(time.monotonic() + 3600)

    async def scenario() -> None:
        async with AsyncHTTPClient(url) as env:
            await env.reset(seed=1)
            lost = env.session_id
            assert on_loop(manager, reap_everything_idle) == 1  # the server's loop, not this one
            await env.reset(seed=1)  # no step in between: the reset itself finds the session gone
            assert env.session_id not in (None, lost)
            assert (await env.step(ToolCall("get_history"))).observation.text.endswith("0/6")

    asyncio.run(scenario())
    eventually(lambda: manager.used == 0, 10, "the client's sessions closed")


@contextlib.contextmanager
def server_process(*args: str) -> Iterator[tuple[str, subprocess.Popen]]:
    port = free_port()
    command = [sys.executable, "-m", "omnienv.cli.main", "serve", *args, "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            assert process.poll() is None, process.stdout.read()
            assert time.monotonic() < deadline, "server did not start"
            select.select([], [], [], 0.02)
        yield url, process
    finally:
        process.kill()
        process.wait(10)
        process.stdout.close()


def test_the_cli_server_serves_and_a_dead_server_is_noticed_at_once() -> None:
    with server_process("wordle", "--max-sessions", "4", "--idle-timeout", "30") as (url, process):
        with WebSocketClient.connect(url) as env:
            env.reset(seed=2)
            assert env.step(ToolCall("get_history")).observation.text.endswith("0/6")
            process.kill()
            process.wait(10)
            started = time.monotonic()
            with pytest.raises(SessionLostError):
                env.step(ToolCall("get_history"))
            assert time.monotonic() - started < 5  # far below the 20 s ping timeout: the close was seen
    with pytest.raises(SessionLostError, match="cannot connect"):
        WebSocketClient.connect(url, connect_timeout=2)


def test_one_process_holds_hundreds_of_sessions_under_a_low_open_file_limit(low_file_limit: int) -> None:
    """A trainer holds a connection per environment: at a soft limit of 256 (the server, another
    process, starts under it too and raises its own), connections past about 240 failed with EMFILE."""
    with server_process("echo", "--max-sessions", "400") as (url, _):

        async def scenario() -> None:
            clients = [AsyncWebSocketClient(url) for _ in range(300)]
            try:
                await asyncio.gather(*(client.open() for client in clients))
                observations = await asyncio.gather(*(client.reset() for client in clients))
                assert len(observations) == 300
            finally:
                await asyncio.gather(*(client.close() for client in clients))

        asyncio.run(scenario())
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == low_file_limit


def test_the_client_does_not_load_the_server_stack() -> None:
    code = "import sys, omnienv.client; print([m for m in ('starlette', 'uvicorn') if m in sys.modules])"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_concurrent_calls_on_one_async_client_are_refused_not_mixed_up(serve) -> None:
    url, _ = serve("wordle")

    async def scenario() -> None:
        async with AsyncWebSocketClient(url) as env:
            await env.reset(seed=1)
            calls = [env.step(ToolCall("get_history")) for _ in range(2)]
            results = await asyncio.gather(*calls, return_exceptions=True)
            assert sum(isinstance(r, UsageError) for r in results) == 1
            assert (await env.state()).step_count == 1

    asyncio.run(scenario())


def test_a_cancelled_step_drops_the_connection_so_replies_never_shift(serve) -> None:
    url, manager = serve(Hang, step_timeout=5)

    async def scenario() -> None:
        env = await connect(url)
        try:
            await env.reset()
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(env.step(ToolCall("hang")), 0.2)
            with pytest.raises(NotResetError):  # the old session is gone with its socket
                await env.step(ToolCall("ping"))
            await env.reset()
            assert (await env.step(ToolCall("ping"))).observation.text == "pong"
        finally:
            await env.close()

    try:
        asyncio.run(scenario())
    finally:
        RELEASE.set()
    eventually(lambda: manager.active == 0, what="both sessions closed")
