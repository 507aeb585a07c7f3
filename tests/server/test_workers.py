"""``omnienv serve --workers 2``: every transport's sessions reach the worker that owns them.

Real servers (``omnienv serve wordle --workers 2 --port 0``, subprocesses in their own process
group, always reaped) and real clients. Every reply names the worker that served it
(``x-omnienv-worker``) and, when another worker received and forwarded it, that one too
(``x-omnienv-via``). Each client opens a fresh connection per request, so requests land on
either worker and about half are forwarded; for every session the tests check that every
reply came from one worker, the one the routing rule names, that some were forwarded, and
that both workers own sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import orjson
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent
from typer.testing import CliRunner

from omnienv.app import create_app
from omnienv.cli.main import app as cli
from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.server.forward import WorkerRouter
from omnienv.server.supervisor import bind
from omnienv.server.workers import WorkerPlace, rpc_session_name, session_name
from tests.polling import eventually
from tests.server.conftest import ws

OMNIENV = str(Path(sys.executable).with_name("omnienv"))
RULE = WorkerPlace(0, 2, "")
"""The routing rule as every worker computes it: ``RULE.owner(name)``."""
TOKEN = "operator-secret"


@dataclass
class Server:
    """A ``--workers 2`` server; ``served[name]`` collects the workers each session's replies came from."""

    proc: subprocess.Popen[bytes]
    url: str
    log: Path
    served: dict[str, set[int]] = field(default_factory=dict)
    forwarded: dict[str, int] = field(default_factory=dict)

    def note(self, name: str, headers: Any) -> None:
        """Record which worker answered a request for session ``name``, and whether it was forwarded."""
        self.served.setdefault(name, set()).add(int(headers["x-omnienv-worker"]))
        self.forwarded[name] = self.forwarded.get(name, 0) + ("x-omnienv-via" in headers)

    def client(self, **options: Any) -> httpx.Client:
        """A client that opens a new connection per request, so each lands on either worker."""
        return httpx.Client(base_url=self.url, timeout=30, limits=httpx.Limits(max_keepalive_connections=0), **options)

    def workers(self) -> dict[int, int]:
        """``{index: pid}`` of both workers, from their /health."""
        seen: dict[int, int] = {}

        def both() -> bool:
            health = httpx.get(f"{self.url}/health", timeout=5).json()
            seen[health["worker"]] = health["pid"]
            return len(seen) == 2

        eventually(both, timeout=20, what="both workers answering /health")
        return seen


@contextmanager
def server(*options: str, env: dict[str, str] | None = None, lean: bool = False) -> Iterator[Server]:
    """``omnienv serve wordle --workers 2`` (``lean``: ``python -m omnienv.app``) on a port of its
    choosing, which it prints; killed with its process group at the end."""
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"omnienv-workers-test-{os.getpid()}-{id(options)}.log"
    command = [sys.executable, "-m", "omnienv.app"] if lean else [OMNIENV, "serve", "--no-ui"]
    command += ["wordle", "--workers", "2", "--port", "0", *options]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        port: list[str] = []

        def healthy() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"the server exited with {proc.returncode}: {log.read_text()}")
            if not port:
                port.extend(re.findall(r"http://127\.0\.0\.1:(\d+)", log.read_text())[:1])
                return False
            try:
                return httpx.get(f"http://127.0.0.1:{port[0]}/health", timeout=5).status_code == 200
            except httpx.TransportError:
                return False

        eventually(healthy, timeout=60, what="the server healthy")
        yield Server(proc, f"http://127.0.0.1:{port[0]}", log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
        proc.wait(30)
        log.unlink(missing_ok=True)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.fixture(scope="module")
def two() -> Iterator[Server]:
    with server() as running:
        yield running


def check_owners(srv: Server, names: list[str]) -> None:
    """Every reply for each session came from its owner alone, both workers own some, and some
    requests reached a worker that is not the owner and were forwarded."""
    assert names
    for name in names:
        assert srv.served[name] == {RULE.owner(name)}, (name, srv.served[name])
    assert {RULE.owner(name) for name in names} == {0, 1}
    assert sum(srv.forwarded[name] for name in names) > 0, "every request landed on its owner: none forwarded"


def ids_on_both_workers(make: Callable[[], str], tries: int = 40, least: int = 4) -> list[str]:
    """Session names from ``make()`` until there are ``least`` and both workers own one
    (connections land at random)."""
    names: list[str] = []
    while len(names) < least or {RULE.owner(n) for n in names} != {0, 1}:
        assert len(names) < tries, f"every one of {len(names)} sessions landed on one worker"
        names.append(make())
    return names


# -- the rule, in-process ----------------------------------------------------------------------


def test_the_rule_names_one_owner_for_every_carrier_and_minted_ids_stay_home() -> None:
    places = [WorkerPlace(i, 3, "/x") for i in range(3)]
    for place in places:
        minted = [place.mint() for _ in range(20)]
        assert {RULE_3.owner(name) for name in minted} == {place.index}
        alias = place.alias("0123abcd" * 4)
        assert RULE_3.owner(alias) == place.index and place.unalias(alias) == "0123abcd" * 4
    assert sum(place.share(100) for place in places) == 100 and [p.share(100) for p in places] == [34, 33, 33]
    with pytest.raises(ValueError, match="at least the number of workers"):
        places[0].share(2)

    def scope(path: str = "/", query: bytes = b"", method: str = "GET", **headers: str) -> dict[str, Any]:
        raw = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
        return {"type": "http", "path": path, "query_string": query, "method": method, "headers": raw}

    cookie = "eyJzZXNzaW9uX2lkIjoiYWJjIn0.c2lnbmF0dXJl"  # itsdangerous: {"session_id":"abc"} . signature
    assert session_name(scope("/sessions/abc/step", method="POST")) == ("abc", False)
    assert session_name(scope("/operator/sessions/abc")) == ("abc", False)
    assert session_name(scope("/ws", b"session_id=abc")) == ("abc", False)
    assert session_name(scope("/mcp", mcp_session_id="abc-1", method="POST")) == ("abc-1", False)
    assert session_name(scope("/wordle/call", x_session_id="abc", method="POST")) == ("abc", False)
    assert session_name(scope("/guess", cookie=f"other=1; omnienv___wordle={cookie}")) == ("abc", False)
    assert session_name(scope("/guess", cookie="omnienv___wordle=garbage")) == (None, False)
    assert session_name(scope("/sessions", method="POST")) == (None, False)
    assert session_name(scope("/mcp", method="POST")) == (None, True)
    assert rpc_session_name(b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"session_id": "abc"}}') == "abc"
    assert rpc_session_name(b"[1]") is None and rpc_session_name(b"{oops") is None


RULE_3 = WorkerPlace(0, 3, "")


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


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--workers", "0"], "workers must be a whole number >= 1"),
        (["--workers", "-2"], "workers must be a whole number >= 1"),
        (["--workers", "3", "--max-sessions", "2"], "max_sessions (2) must be at least workers (3)"),
        (["--workers", "2", "--nemo-gym"], "drop --ray or --nemo-gym"),
    ],
)
def test_bad_worker_counts_are_refused_with_a_clear_error(options: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["serve", "wordle", *options])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split()), result.output


# -- every transport ----------------------------------------------------------------------------


def test_websocket_sessions_live_on_their_connections_worker(two: Server) -> None:
    workers = set()
    for _ in range(40):
        with ws(two.url) as connection:
            assert connection.response is not None
            worker = int(connection.response.headers["x-omnienv-worker"])
            assert "x-omnienv-via" not in connection.response.headers  # a new session stays where it landed
            connection.send(orjson.dumps({"type": "reset", "data": {"task_id": "test/0003"}}).decode())
            assert orjson.loads(connection.recv())["type"] == "observation"
            connection.send(orjson.dumps({"type": "state"}).decode())
            assert orjson.loads(connection.recv())["data"]["step_count"] == 0
        workers.add(worker)
        if workers == {0, 1}:
            break
    assert workers == {0, 1}


def test_a_websocket_attached_to_an_http_session_reaches_its_owner(two: Server) -> None:
    guess = {"type": "step", "data": {"type": "call_tool", "tool_name": "guess", "arguments": {"word": "crane"}}}
    with two.client() as http:

        def make() -> str:
            created = http.post("/sessions")
            sid: str = created.json()["session_id"]
            two.note(sid, created.headers)
            return sid

        names = ids_on_both_workers(make, tries=60) + [make() for _ in range(6)]
        for sid in names:
            with ws(two.url, f"?session_id={sid}") as connection:  # a new connection: either worker accepts it
                assert connection.response is not None
                two.note(sid, connection.response.headers)
                connection.send(orjson.dumps({"type": "reset", "data": {"task_id": "test/0003"}}).decode())
                assert orjson.loads(connection.recv())["type"] == "observation"
                for _ in range(3):
                    connection.send(orjson.dumps(guess).decode())
                    assert orjson.loads(connection.recv())["type"] == "observation"
            state = http.get(f"/sessions/{sid}/state")
            two.note(sid, state.headers)
            assert state.json()["data"]["step_count"] == 3  # the socket played the HTTP session itself
            two.note(sid, http.delete(f"/sessions/{sid}").headers)
    check_owners(two, names)


def test_http_sessions_are_served_by_their_owner_on_every_request(two: Server) -> None:
    with two.client() as http:

        def make() -> str:
            created = http.post("/sessions")
            assert created.status_code == 201
            sid: str = created.json()["session_id"]
            two.note(sid, created.headers)
            return sid

        names = ids_on_both_workers(make)
        for sid in names:
            two.note(sid, http.post(f"/sessions/{sid}/reset", json={"task_id": "test/0003"}).headers)
            history: list[tuple[str, str]] = []
            for _ in range(3):
                reply = http.post(
                    f"/sessions/{sid}/step",
                    json={"type": "call_tool", "tool_name": "guess", "arguments": {"word": next_guess(history)}},
                )
                two.note(sid, reply.headers)
                marks = read_marks(reply.json()["data"]["observation"]["result"]["content"][0]["text"])
                assert marks is not None
                history.append(marks)
            state = http.get(f"/sessions/{sid}/state")
            two.note(sid, state.headers)
            assert state.json()["data"]["step_count"] == 3
            two.note(sid, http.post(f"/sessions/{sid}/end").headers)
            gone = http.delete(f"/sessions/{sid}")
            two.note(sid, gone.headers)
            assert gone.json()["closed"] is True
            assert http.get(f"/sessions/{sid}/state").status_code == 404
    check_owners(two, names)


def test_mcp_sessions_of_the_sdk_client_stay_on_their_worker(two: Server) -> None:
    async def play() -> str:
        replies: list[httpx2.Response] = []

        async def keep(response: httpx2.Response) -> None:
            replies.append(response)

        client = httpx2.AsyncClient(
            timeout=30, limits=httpx2.Limits(max_keepalive_connections=0), event_hooks={"response": [keep]}
        )
        async with (
            client,
            streamable_http_client(f"{two.url}/mcp?task_id=test/0003", http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            history: list[tuple[str, str]] = []
            for _ in range(4):
                content = (await session.call_tool("guess", {"word": next_guess(history)})).content[0]
                assert isinstance(content, TextContent)
                text = content.text
                marks = read_marks(text)
                assert marks is not None, text
                history.append(marks)
            name = replies[0].headers["mcp-session-id"]
        for reply in replies:
            assert reply.headers.get("mcp-session-id", name) == name
            two.note(name, reply.headers)
        return name

    names = ids_on_both_workers(lambda: asyncio.run(asyncio.wait_for(play(), 60)), tries=20, least=2)
    check_owners(two, names)


def test_openenv_json_rpc_on_mcp_is_routed_by_the_session_in_its_body(two: Server) -> None:
    def rpc(method: str, **params: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}

    with two.client() as http:

        def make() -> str:
            created = http.post("/mcp", json=rpc("openenv/session/create"))
            sid: str = created.json()["result"]["session_id"]
            two.note(sid, created.headers)
            return sid

        names = ids_on_both_workers(make)
        for sid in names:
            two.note(sid, http.post(f"/sessions/{sid}/reset", json={"task_id": "test/0003"}).headers)
            for word in ("crane", "slate", "pious"):
                call = rpc("tools/call", name="guess", arguments={"word": word}, session_id=sid)
                reply = http.post("/mcp", json=call)
                two.note(sid, reply.headers)
                assert "result" in reply.json(), reply.text
            state = http.get(f"/sessions/{sid}/state")
            two.note(sid, state.headers)
            assert state.json()["data"]["step_count"] == 3
            closed = http.post("/mcp", json=rpc("openenv/session/close", session_id=sid))
            two.note(sid, closed.headers)
            assert closed.json()["result"]["closed"] is True
    check_owners(two, names)


def sse_events(reply: httpx.Response) -> list[tuple[str, str]]:
    events = re.findall(r"event: *(\S+)\r?\ndata: *(.*)", reply.text)
    assert events, reply.text
    return events


def test_ors_sessions_named_by_x_session_id_reach_the_worker_that_minted_them(two: Server) -> None:
    with two.client() as http:

        def make() -> str:
            minted = http.post("/create_session")
            sid = sse_events(minted)[0][1].strip()
            two.note(sid, minted.headers)
            created = http.post("/create", json={"split": "test", "index": 3}, headers={"X-Session-ID": sid})
            assert created.status_code == 200, created.text
            two.note(sid, created.headers)
            return sid

        names = ids_on_both_workers(make)
        for sid in names:
            headers = {"X-Session-ID": sid}
            two.note(sid, http.get("/wordle/prompt", headers=headers).headers)
            for word in ("crane", "slate", "pious"):
                reply = http.post("/wordle/call", json={"name": "guess", "input": {"word": word}}, headers=headers)
                two.note(sid, reply.headers)
                assert orjson.loads(sse_events(reply)[-1][1])["ok"] is True
            two.note(sid, http.post("/ping", headers=headers).headers)
            two.note(sid, http.post("/delete", headers=headers).headers)
            assert http.post("/ping", headers=headers).status_code == 410
    check_owners(two, names)


def test_nemo_gym_cookie_sessions_reach_their_owner(two: Server) -> None:
    def make() -> str:
        with two.client() as http:
            seeded = http.post("/seed_session", json={"task_id": "test/0003"})
            assert seeded.status_code == 200, seeded.text
            cookie = http.cookies["omnienv___wordle"]
            scope = {"type": "http", "path": "/", "headers": [(b"cookie", f"omnienv___wordle={cookie}".encode())]}
            name = session_name(scope)[0]
            assert name is not None
            two.note(name, seeded.headers)
            for word in ("crane", "slate"):
                reply = http.post("/guess", json={"word": word})
                two.note(name, reply.headers)
                assert reply.status_code == 200 and reply.headers["x-omnienv-done"] == "false", reply.text
            verified = http.post("/verify", json={"responses_create_params": {"input": []}, "response": {}})
            two.note(name, verified.headers)
            assert verified.json()["mask_sample"] is False
            closed = http.post("/close_session")
            two.note(name, closed.headers)
            assert closed.json() == {"closed": True}
            return name

    names = ids_on_both_workers(make)
    check_owners(two, names)


def test_a_forged_forwarding_header_from_outside_is_not_trusted(two: Server) -> None:
    with two.client(headers={"x-omnienv-forwarded": "forged"}) as http:
        sid = http.post("/sessions").json()["session_id"]
        owner = RULE.owner(sid)
        via = 0
        for _ in range(12):
            reply = http.get(f"/sessions/{sid}/state")  # a trusted one would be served where it landed: 404
            assert reply.status_code == 200 and int(reply.headers["x-omnienv-worker"]) == owner
            via += "x-omnienv-via" in reply.headers
        assert via > 0, "every request landed on the owner: nothing was forwarded"
        http.delete(f"/sessions/{sid}")


def test_an_agent_only_server_of_two_workers_serves_the_operators_episodes() -> None:
    with server("--agent-only", env={**os.environ, "OMNIENV_OPERATOR_TOKEN": TOKEN}) as srv, srv.client() as http:
        bearer = {"authorization": f"Bearer {TOKEN}"}

        def make() -> str:
            started = http.post("/operator/sessions", json={"task_id": "test/0003"}, headers=bearer)
            assert started.status_code == 201, started.text
            sid: str = started.json()["session_id"]
            srv.note(sid, started.headers)
            return sid

        names = ids_on_both_workers(make)

        async def play(sid: str) -> None:
            async def keep(response: httpx2.Response) -> None:
                srv.note(sid, response.headers)  # the MCP session's replies: all from the episode's owner

            client = httpx2.AsyncClient(
                timeout=30, limits=httpx2.Limits(max_keepalive_connections=0), event_hooks={"response": [keep]}
            )
            async with (
                client,
                streamable_http_client(f"{srv.url}/mcp?session_id={sid}", http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for word in ("crane", "slate"):
                    assert (await session.call_tool("guess", {"word": word})).is_error is False

        names = [next(n for n in names if RULE.owner(n) == worker) for worker in (0, 1)]  # one MCP agent each
        for sid in names:
            asyncio.run(asyncio.wait_for(play(sid), 60))
            state = http.get(f"/operator/sessions/{sid}/state", headers=bearer)
            srv.note(sid, state.headers)
            assert state.json()["data"]["step_count"] == 2
            assert http.post(f"/sessions/{sid}/reset", json={}).json()["data"]["code"] == "AGENT_ONLY"
        check_owners(srv, names)


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
