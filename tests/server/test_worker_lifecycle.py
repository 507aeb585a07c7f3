"""``omnienv serve --workers N``: starting and stopping.

Health says "starting" until every worker serves; a port another server holds is refused, not
shared; bad worker counts are refused before anything starts. Real ``--workers 2`` servers
(tests/server/workers.py) then show that SIGTERM stops every worker and removes their private
sockets, that a worker dying stops the server with an error (its sessions answered WORKER_LOST
meanwhile, the live worker serving), that so does a worker whose event loop stalls (killed once
it has not answered for ``--worker-stall-timeout``) while an idle healthy one is never taken for
stalled, and that no worker outlives its supervisor or its process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from omnienv.app import create_app
from omnienv.app.__main__ import main as lean_main
from omnienv.cli.main import app as cli
from omnienv.server.forward import WorkerRouter
from omnienv.server.supervisor import bind
from omnienv.server.workers import WorkerPlace
from tests.polling import eventually
from tests.server.workers import HOLDING, RULE, Server, alive, ids_on_both_workers, server

# -- in-process --------------------------------------------------------------------------------


def test_health_says_starting_until_every_worker_serves_and_then_names_the_worker() -> None:
    place = WorkerPlace(1, 2, "/nowhere")
    up = [False]
    router = WorkerRouter(create_app("wordle", place=place, max_sessions=5), place, "token", lambda: up[0])

    async def health(**headers: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=router)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
            return await client.get("/health", headers=headers)

    starting = asyncio.run(health())
    assert starting.status_code == 503 and starting.json() == {"status": "starting", "worker": 1, "workers": 2}
    assert asyncio.run(health(origin="https://evil.example")).status_code == 403  # checked before anything
    up[0] = True
    healthy = asyncio.run(health())
    assert healthy.status_code == 200 and healthy.headers["x-omnienv-worker"] == "1"
    assert healthy.json() == {
        "status": "healthy",
        "worker": 1,
        "workers": 2,
        "pid": os.getpid(),
        "sessions": 0,
        "max_sessions": 5,
    }


def test_a_port_another_multi_worker_server_holds_is_refused_not_shared() -> None:
    with bind("127.0.0.1", 0) as first:
        first.listen()
        with pytest.raises(OSError) as refused:
            bind("127.0.0.1", first.getsockname()[1]).close()
    assert refused.value.errno == errno.EADDRINUSE


# -- the command line ------------------------------------------------------------------------------

STALL_REFUSED = "worker_stall_timeout (--worker-stall-timeout) must be > 0 seconds"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--workers", "0"], "workers must be a whole number >= 1"),
        (["--workers", "-2"], "workers must be a whole number >= 1"),
        (["--workers", "3", "--max-sessions", "2"], "max_sessions (2) must be at least workers (3)"),
        (["--workers", "2", "--nemo-gym"], "drop --ray or --nemo-gym"),
        (["--workers", "2", "--worker-stall-timeout", "-1"], STALL_REFUSED),
        (["--workers", "2", "--worker-stall-timeout", "nan"], STALL_REFUSED),
    ],
)
def test_bad_worker_counts_are_refused_with_a_clear_error(options: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["serve", "wordle", *options])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split()), result.output


def test_the_lean_server_refuses_a_negative_stall_timeout_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        lean_main(["wordle", "--workers", "2", "--worker-stall-timeout", "-1"])
    assert exited.value.code == 2
    assert STALL_REFUSED in capsys.readouterr().err


# -- processes ---------------------------------------------------------------------------------


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A TMPDIR short enough for the workers' socket paths (pytest's own, under xdist, is not)."""
    path = Path(tempfile.mkdtemp(prefix="ow-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("lean", [False, True], ids=["omnienv serve", "python -m omnienv.app"])
def test_sigterm_stops_every_worker_and_removes_the_private_sockets(short_tmp: Path, lean: bool) -> None:
    tmp_path = short_tmp
    with server(env={**os.environ, "TMPDIR": str(tmp_path)}, lean=lean) as srv:
        pids = srv.workers().values()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith("omnienv-workers-")]
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(30) == 0
        eventually(lambda: not any(alive(pid) for pid in pids), what="every worker gone")
        assert not [p for p in tmp_path.iterdir() if p.name.startswith("omnienv-workers-")]


def test_a_worker_that_dies_stops_the_server_with_an_error() -> None:
    with server() as srv:
        pids = srv.workers()
        os.kill(pids[1], signal.SIGKILL)
        assert srv.proc.wait(30) == 1
        assert not alive(pids[0])
        assert "omnienv-worker-1" in srv.log.read_text() and "SIGKILL" in srv.log.read_text()


@pytest.mark.parametrize("dead", [0, 1])
def test_until_the_server_stops_a_dead_workers_sessions_get_worker_lost_and_the_live_one_serves(
    short_tmp: Path, dead: int
) -> None:
    """The supervisor is held (SIGSTOP) so the window between a worker's death and the server's
    stop stays open: nothing may wait on a socket only the dead worker would have accepted from."""
    with server(env={**os.environ, "TMPDIR": str(short_tmp)}) as srv:
        pids, live = srv.workers(), 1 - dead
        limits = httpx.Limits(max_keepalive_connections=0)  # a new connection per request: either worker
        with httpx.Client(base_url=srv.url, timeout=10, limits=limits) as http:
            names = ids_on_both_workers(lambda: http.post("/sessions").json()["session_id"])
            for name in names:
                assert http.post(f"/sessions/{name}/reset", json={}).status_code == 200
            os.kill(srv.proc.pid, signal.SIGSTOP)
            try:
                os.kill(pids[dead], signal.SIGKILL)
                eventually(lambda: not alive(pids[dead]), what=f"worker {dead} gone")
                for name in names * 2:
                    reply = http.get(f"/sessions/{name}/state")
                    if RULE.owner(name) == dead:
                        assert reply.status_code == 502 and reply.json()["data"]["code"] == "WORKER_LOST", reply.text
                        assert reply.headers["x-omnienv-worker"] == str(live), "the router names itself"
                    else:
                        assert reply.status_code == 200 and reply.headers["x-omnienv-worker"] == str(live)
                for _ in range(8):
                    opened = http.post("/sessions")
                    assert opened.status_code == 201 and opened.headers["x-omnienv-worker"] == str(live)
            finally:
                os.kill(srv.proc.pid, signal.SIGCONT)
        assert srv.proc.wait(30) == 1
        eventually(lambda: not alive(pids[live]), timeout=30, what="the live worker stopped too")
        assert not [p for p in short_tmp.iterdir() if p.name.startswith("omnienv-workers-")]


def test_no_worker_outlives_its_supervisor_or_its_process_group(short_tmp: Path) -> None:
    tmp_path = short_tmp
    with server(env={**os.environ, "TMPDIR": str(tmp_path)}) as srv:
        pids = srv.workers().values()
        os.kill(srv.proc.pid, signal.SIGKILL)  # the supervisor alone: its workers get the parent-death signal
        srv.proc.wait(10)
        eventually(lambda: not any(alive(pid) for pid in pids), timeout=30, what="the workers gone")
        assert not [p for p in tmp_path.iterdir() if p.name.startswith("omnienv-workers-")]  # the last one out
    with server(env={**os.environ, "TMPDIR": str(tmp_path)}) as srv:
        pids = srv.workers().values()
        os.killpg(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait(10)
        eventually(lambda: not any(alive(pid) for pid in pids), what="the process group gone")


def _hold_a_workers_loop(srv: Server) -> int:
    """Step a session into a call that holds its worker's event loop (for 10 minutes); its worker."""
    with httpx.Client(base_url=srv.url, timeout=10) as http:
        name = http.post("/sessions").json()["session_id"]
        assert http.post(f"/sessions/{name}/reset", json={}).status_code == 200
        hold = {"type": "call_tool", "tool_name": "hold", "arguments": {"seconds": 600}}
        with contextlib.suppress(httpx.TimeoutException):  # it never answers: its worker is killed
            http.post(f"/sessions/{name}/step", json=hold, timeout=1)
    return RULE.owner(name)


@pytest.mark.parametrize("how", ["SIGSTOP", "a call holding its loop"])
def test_a_worker_that_stalls_is_killed_and_stops_the_server_with_an_error(short_tmp: Path, how: str) -> None:
    with server("--worker-stall-timeout", "2", env={**os.environ, "TMPDIR": str(short_tmp)}, serving=HOLDING) as srv:
        pids = srv.workers()
        try:
            if how == "SIGSTOP":
                stalled = 1
                os.kill(pids[stalled], signal.SIGSTOP)
            else:
                stalled = _hold_a_workers_loop(srv)
            assert srv.proc.wait(30) == 1  # 2 s to notice, then the live worker's graceful stop
        finally:  # nothing left stopped or wedged, even when the supervisor failed to act
            for pid in pids.values():
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
        log = " ".join(srv.log.read_text().split())
        said = f"omnienv-worker-{stalled} (pid {pids[stalled]}) stalled: its event loop did not answer for 2 s"
        assert said in log and "--worker-stall-timeout" in log, log
        assert not any(alive(pid) for pid in pids.values())
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{srv.url}/health", timeout=5)
        assert not [p for p in short_tmp.iterdir() if p.name.startswith("omnienv-workers-")]


def test_an_idle_healthy_server_is_never_taken_for_stalled() -> None:
    with server("--worker-stall-timeout", "2") as srv:
        pids = srv.workers()
        with pytest.raises(subprocess.TimeoutExpired):
            srv.proc.wait(6)  # three stall timeouts with nothing to do
        assert srv.workers() == pids
