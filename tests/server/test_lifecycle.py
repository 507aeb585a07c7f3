"""Sessions end, whatever happens: hung steps, idle and dead clients, half-open sockets; nothing leaks."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from websockets.asyncio.client import connect as aconnect
from websockets.exceptions import ConnectionClosed

from tests.polling import eventually
from tests.server.conftest import RELEASE, AsyncHang, Hang, on_loop, ws
from tests.server.test_ws import ask, call


@pytest.mark.parametrize("env", [Hang, AsyncHang], ids=["sync-in-thread", "async"])
def test_a_hung_step_becomes_a_typed_error_and_a_failed_episode(serve, env) -> None:
    url, manager = serve(env, step_timeout=1.0)
    with ws(url) as connection:
        ask(connection, {"type": "reset", "data": {}})
        started = time.monotonic()
        timeout = ask(connection, call("hang"))
        assert time.monotonic() - started < 5
        assert timeout["type"] == "error" and timeout["data"]["code"] == "STEP_TIMEOUT"
        assert "1 s deadline" in timeout["data"]["message"]
        state = ask(connection, {"type": "state"})["data"]
        assert state["failure"]["kind"] == "step_timeout" and state["truncated"] is True
        refused = ask(connection, call("ping"))
        assert refused["data"]["code"] == "EPISODE_OVER" and "reset()" in refused["data"]["message"]
        ask(connection, {"type": "reset", "data": {}})  # a fresh instance, not the hung one
        assert ask(connection, call("ping"))["data"]["observation"]["result"]["data"] == "pong"
        assert "failure" not in ask(connection, {"type": "state"})["data"]
    RELEASE.set()
    eventually(lambda: manager.active == 0)


def test_sync_envs_share_a_bounded_pool_and_hangs_do_not_block_others(serve) -> None:
    url, _ = serve(Hang, step_timeout=5, blocking_threads=3)
    with ws(url) as stuck, ws(url) as other:
        ask(stuck, {"type": "reset", "data": {}})
        ask(other, {"type": "reset", "data": {}})
        stuck.send(json.dumps(call("hang")))
        for _ in range(20):
            assert ask(other, call("ping"))["data"]["observation"]["result"]["data"] == "pong"
        names = [t.name for t in threading.enumerate() if t.name.startswith("omnienv-env")]
        assert 1 <= len(names) <= 3
        RELEASE.set()
        assert json.loads(stuck.recv(timeout=5))["data"]["observation"]["result"]["data"] == "released"


def test_long_blocking_steps_never_hold_up_another_sessions_step(serve) -> None:
    """33 sessions hang inside a blocking step, more than a pool the size of the cores holds (at
    most 32 threads); a 34th session's step still answers at once, within its deadline."""
    url, _ = serve(Hang, step_timeout=30)

    async def traffic() -> None:
        connections = await _open_many(url, 34)
        try:
            for connection in connections[:33]:
                await connection.send(json.dumps(call("hang")))
            await connections[33].send(json.dumps(call("ping")))
            reply = json.loads(await asyncio.wait_for(connections[33].recv(), 10))
            assert reply["data"]["observation"]["result"]["data"] == "pong"
        finally:
            RELEASE.set()
            await asyncio.gather(*(c.close() for c in connections))

    asyncio.run(traffic())


def test_idle_sessions_are_reaped_and_told_why(serve) -> None:
    url, manager = serve("wordle", idle_timeout=0.3)
    with httpx.Client(base_url=url, trust_env=False) as http:
        session_id = http.post("/sessions").json()["session_id"]
        with ws(url) as connection:  # sends nothing: only the reaper can end it
            with pytest.raises(ConnectionClosed) as closed:
                connection.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
            assert "idle for more than 0.3 s" in closed.value.rcvd.reason
        eventually(lambda: manager.active == 0, what="idle sessions reaped")
        gone = http.get(f"/sessions/{session_id}/state")
        assert gone.status_code == 404 and gone.json()["data"]["code"] == "SESSION_NOT_FOUND"


def test_a_busy_session_is_not_reaped_mid_step(serve) -> None:
    url, manager = serve(Hang, idle_timeout=60, step_timeout=30)

    async def reap_everything_idle() -> int:
        return await manager.reap_idle(time.monotonic() + 3600)  # as if an hour had passed

    with ws(url) as connection:
        ask(connection, {"type": "reset", "data": {}})
        connection.send(json.dumps(call("hang")))
        eventually(lambda: next(iter(manager.sessions.values())).machine.busy, what="the step running")
        assert on_loop(manager, reap_everything_idle) == 0 and manager.active == 1
        RELEASE.set()
        assert json.loads(connection.recv(timeout=10))["type"] == "observation"
    eventually(lambda: manager.active == 0, what="the session closed with its socket")


CLIENT = """
import sys, time
from omnienv.client import WebSocketClient
client = WebSocketClient.connect(sys.argv[1])
client.reset(seed=1)
print("ready", flush=True)
time.sleep(60)
"""


def test_killing_a_client_mid_episode_frees_its_session(serve) -> None:
    url, manager = serve("wordle", idle_timeout=10.0)
    child = subprocess.Popen([sys.executable, "-c", CLIENT, url], stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([child.stdout], [], [], 60)
        assert ready and child.stdout.readline().strip() == "ready"
        assert manager.active == 1
        child.send_signal(signal.SIGKILL)
        child.wait(5)
        eventually(lambda: manager.active == 0, timeout=10, what="the dead client's session freed")
    finally:
        child.kill()
        child.wait(5)
        child.stdout.close()


def test_half_open_connections_are_found_by_pings(serve) -> None:
    url, manager = serve("wordle", idle_timeout=None, ws_ping_interval=1.0, ws_ping_timeout=1.0)
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:  # never answers pings
        raw.sendall(
            b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        assert raw.recv(4096).startswith(b"HTTP/1.1 101")
        eventually(lambda: manager.active == 1, what="session opened")
        eventually(lambda: manager.active == 0, timeout=10, what="half-open session dropped")


async def _open_many(url: str, count: int) -> list:
    target = url.replace("http://", "ws://") + "/ws"
    gate = asyncio.Semaphore(64)

    async def one():
        async with gate:
            connection = await aconnect(target, proxy=None, compression=None, open_timeout=20)
            await connection.send('{"type": "reset", "data": {}}')
            assert json.loads(await connection.recv())["type"] == "observation"
            return connection

    return await asyncio.gather(*(one() for _ in range(count)))


@pytest.fixture
def file_limit() -> Iterator[None]:
    """2,000+ sockets live in this process (both ends of 1,000 sessions): lift a low soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_thousand_sessions_at_once(serve, file_limit) -> None:
    url, manager = serve("wordle")

    async def scenario() -> None:
        connections = await _open_many(url, 1000)
        try:
            assert manager.active == 1000
            for connection in connections[:50]:  # every session still answers
                await connection.send(json.dumps(call("guess", word="crane")))
                assert json.loads(await connection.recv())["type"] == "observation"
        finally:
            await asyncio.gather(*(c.close() for c in connections))

    asyncio.run(scenario())
    eventually(lambda: manager.active == 0, timeout=10, what="1,000 sessions closed")


def test_a_server_makes_room_for_its_sessions_under_a_low_open_file_limit(serve, low_file_limit) -> None:
    """At 256 open files, sessions past about 120 (two descriptors each here: client and server) failed."""
    url, manager = serve("wordle", max_sessions=2000)
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == low_file_limit  # the hard limit

    async def scenario() -> None:
        connections = await _open_many(url, 600)
        try:
            assert manager.active == 600
        finally:
            await asyncio.gather(*(c.close() for c in connections))

    asyncio.run(scenario())
    eventually(lambda: manager.active == 0, timeout=10, what="600 sessions closed")


def test_a_hard_limit_below_max_sessions_is_named_at_start_up(low_file_limit, caplog) -> None:
    from omnienv.server.run import SPARE_FILES, make_room_for_sessions

    assert make_room_for_sessions(100) == low_file_limit == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert not caplog.records
    if low_file_limit != resource.RLIM_INFINITY:  # an unlimited hard limit holds any count
        assert make_room_for_sessions(low_file_limit - SPARE_FILES) == low_file_limit
        assert not caplog.records
        make_room_for_sessions(low_file_limit)
        assert "raise the hard limit (ulimit -Hn" in caplog.text and f"max_sessions ({low_file_limit})" in caplog.text


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_no_task_thread_or_socket_outlives_its_session(serve) -> None:
    threads_before, fds_before = set(threading.enumerate()), _fds()
    served = serve(Hang, step_timeout=5)
    url, manager = served

    async def count_tasks() -> int:
        return len(asyncio.all_tasks())

    baseline = on_loop(manager, count_tasks)

    async def traffic() -> None:
        connections = await _open_many(url, 20)
        for connection in connections:
            await connection.send(json.dumps(call("ping")))
            assert json.loads(await connection.recv())["type"] == "observation"
        await asyncio.gather(*(c.close() for c in connections))

    asyncio.run(traffic())
    with httpx.Client(base_url=url, trust_env=False) as http:
        for _ in range(5):
            session_id = http.post("/sessions").json()["session_id"]
            http.post(f"/sessions/{session_id}/reset", json={})
            http.delete(f"/sessions/{session_id}")
    eventually(lambda: manager.active == 0, what="sessions closed")
    eventually(lambda: on_loop(manager, count_tasks) <= baseline, what="server tasks back to baseline")
    served.stop()
    eventually(lambda: set(threading.enumerate()) <= threads_before, what="threads joined")
    eventually(lambda: _fds() <= fds_before, what="sockets closed")


def test_an_environment_the_machine_cannot_run_stops_the_server_at_start_up(capfd) -> None:
    """``preflight`` runs once when the server starts: the operator learns the fix before any episode."""
    from omnienv.app import create_app
    from omnienv.core import Environment, EnvironmentFailure, tool
    from omnienv.server.run import running

    calls: list[str] = []

    class NeedsFoo(Environment):
        name = "needs-foo"

        @classmethod
        def preflight(cls) -> None:
            calls.append("preflight")
            if len(calls) > 1:
                raise EnvironmentFailure("foo is not installed: run 'apt-get install foo'")

        @tool
        def noop(self) -> str:
            """Do nothing."""
            return ""

    with running(create_app(NeedsFoo)) as url:
        assert httpx.get(f"{url}/health").status_code == 200
        assert calls == ["preflight"]
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="failed to start"):
        with running(create_app(NeedsFoo)):
            pass
    assert time.monotonic() - started < 5
    assert "apt-get install foo" in capfd.readouterr().err


def test_a_server_reads_the_tasks_off_its_event_loop_as_it_starts(serve) -> None:
    """A split's first reading may be slow (Jupyter builds its tasks' data, 0.4 s): done by the first
    reset, it held the loop, and every session on it, that long."""
    from omnienv.core import Environment, Task

    read_in: list[str] = []

    class SlowTasks(Environment):
        """Tasks that take a while to read."""

        splits = ("test",)

        @classmethod
        def tasks(cls, split: str) -> tuple[Task, ...]:
            read_in.append(threading.current_thread().name)
            return (Task("test/0", "test"),)

    url, _ = serve(SlowTasks)
    eventually(lambda: bool(read_in), what="the tasks read")
    assert read_in == [read_in[0]] and read_in[0].startswith("omnienv-blocking"), read_in
    with ws(url) as connection:
        assert ask(connection, {"type": "reset", "data": {}})["type"] == "observation"
    assert len(read_in) == 1  # read once, for every reset
