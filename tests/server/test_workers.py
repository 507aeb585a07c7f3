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
import os
from collections.abc import Iterator
from typing import Any

import httpx2
import orjson
import pytest
from itsdangerous import URLSafeSerializer
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.server.workers import WorkerPlace, nemo_gym_cookie, rpc_session_name, session_name
from tests.server.conftest import ws
from tests.server.workers import RULE, TOKEN, Server, check_owners, ids_on_both_workers, server, sse_events


@pytest.fixture(scope="module")
def two() -> Iterator[Server]:
    with server() as running:
        yield running


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

    def name(scope: dict[str, Any]) -> tuple[str | None, bool]:
        return session_name(scope, nemo_gym_cookie("wordle"))

    assert name(scope("/sessions/abc/step", method="POST")) == ("abc", False)
    assert name(scope("/operator/sessions/abc")) == ("abc", False)
    assert name(scope("/ws", b"session_id=abc")) == ("abc", False)
    assert name(scope("/mcp", mcp_session_id="abc-1", method="POST")) == ("abc-1", False)
    assert name(scope("/wordle/call", x_session_id="abc", method="POST")) == ("abc", False)
    assert name(scope("/guess", cookie=f"other=1; omnienv___wordle={cookie}")) == ("abc", False)
    assert name(scope("/guess", cookie="omnienv___wordle=garbage")) == (None, False)
    other = "eyJzZXNzaW9uX2lkIjoieHl6In0.c2lnbmF0dXJl"  # {"session_id":"xyz"}: another env's cookie
    assert name(scope("/guess", cookie=f"omnienv___counter={other}; omnienv___wordle={cookie}")) == ("abc", False)
    assert name(scope("/sessions", method="POST")) == (None, False)
    assert name(scope("/mcp", method="POST")) == (None, True)
    # A carrier counts only where its route reads it: another transport's header is ignored.
    assert name(scope("/wordle/call", mcp_session_id="zzz-1", x_session_id="abc", method="POST")) == ("abc", False)
    assert name(scope("/mcp", x_session_id="zzz", mcp_session_id="abc-1", method="POST")) == ("abc-1", False)
    assert name(scope("/mcp", x_session_id="zzz", method="POST")) == (None, True)
    assert name(scope("/ws", b"session_id=abc", x_session_id="zzz", mcp_session_id="zzz-1")) == ("abc", False)
    assert name(scope("/mcp", cookie=f"omnienv___wordle={cookie}", method="POST")) == (None, True)
    assert rpc_session_name(b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"session_id": "abc"}}') == "abc"
    assert rpc_session_name(b"[1]") is None and rpc_session_name(b"{oops") is None


RULE_3 = WorkerPlace(0, 3, "")


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


def test_a_websocket_the_owner_refuses_is_refused_as_the_owner_does_never_worker_lost(two: Server) -> None:
    """A WebSocket to a session path that has no WebSocket route: the owner denies the handshake
    (403), and a worker forwarding it must pass that on rather than report the owner lost."""
    with two.client() as http:
        names = ids_on_both_workers(lambda: http.post("/sessions").json()["session_id"], least=2)
    via = 0
    for sid in names:
        for _ in range(6):  # a new connection each: either worker receives it
            target = two.url.replace("http://", "ws://") + f"/sessions/{sid}/state"
            with pytest.raises(InvalidStatus) as refused:
                ws_connect(target, proxy=None, open_timeout=10, close_timeout=2).close()
            assert refused.value.response.status_code == 403
            via += "x-omnienv-via" in refused.value.response.headers
    assert via > 0, "every handshake landed on its owner: none was forwarded"


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
            # One client for MCP and ORS keeps its mcp-session-id on its ORS requests: a session id
            # of the other transport, owned by the other worker, must not route the request.
            stray = next(f"{n:032x}-0" for n in range(1000) if RULE.owner(f"{n:032x}-0") != RULE.owner(sid))
            call = {"name": "get_history", "input": {}}
            reply = http.post("/wordle/call", json=call, headers={"mcp-session-id": stray, **headers})
            two.note(sid, reply.headers)
            assert orjson.loads(sse_events(reply)[-1][1])["ok"] is True, reply.text
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
            name = session_name(scope, "omnienv___wordle")[0]
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


def test_a_nemo_gym_session_reaches_its_owner_among_other_environments_cookies(two: Server) -> None:
    """A client's cookie jar sends every cookie of the host, whatever the port: those of another
    environment's server come along, and only this environment's cookie may route the request."""

    def seed() -> tuple[str, str]:
        with two.client() as http:
            assert http.post("/seed_session", json={"task_id": "test/0003"}).status_code == 200
            cookie = http.cookies["omnienv___wordle"]
        return URLSafeSerializer("unknown").loads_unsafe(cookie)[1]["session_id"], cookie

    seeded: dict[str, str] = {}
    while {RULE.owner(name) for name in seeded} != {0, 1}:
        assert len(seeded) < 40, "every session landed on one worker"
        name, cookie = seed()
        seeded[name] = cookie
    with two.client() as http:
        for name, cookie in seeded.items():
            other = next(value for key, value in seeded.items() if RULE.owner(key) != RULE.owner(name))
            for _ in range(5):  # either worker receives it; each time the owner serves it
                reply = http.post(
                    "/guess",
                    json={"word": "crane"},
                    headers={"cookie": f"omnienv___counter={other}; omnienv___wordle={cookie}"},
                )
                assert reply.status_code == 200, reply.text
                two.note(name, reply.headers)
    check_owners(two, list(seeded))


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


def test_a_refusal_the_router_makes_itself_names_its_worker(two: Server) -> None:
    """A foreign Origin is refused by the worker the connection landed on, before any forward:
    that reply names its worker too, as every reply does."""
    with two.client() as http:
        sid = http.post("/sessions").json()["session_id"]
        try:
            workers = set()
            for _ in range(12):
                refused = http.get(f"/sessions/{sid}/state", headers={"origin": "https://evil.example"})
                assert refused.status_code == 403, refused.text
                workers.add(refused.headers["x-omnienv-worker"])
            assert workers <= {"0", "1"} and workers
        finally:
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

        async def play(sid: str, query: str) -> None:
            async def keep(response: httpx2.Response) -> None:
                srv.note(sid, response.headers)  # the MCP session's replies: all from the episode's owner

            client = httpx2.AsyncClient(
                timeout=30, limits=httpx2.Limits(max_keepalive_connections=0), event_hooks={"response": [keep]}
            )
            async with (
                client,
                streamable_http_client(f"{srv.url}/mcp?{query}", http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for word in ("crane", "slate"):
                    assert (await session.call_tool("guess", {"word": word})).is_error is False

        names = [next(n for n in names if RULE.owner(n) == worker) for worker in (0, 1)]  # one MCP agent each
        for sid in names:
            # the router and the route read one session_id, the first, even when a client sends two
            decoy = next(n for n in names if RULE.owner(n) != RULE.owner(sid))
            asyncio.run(asyncio.wait_for(play(sid, f"session_id={sid}&session_id={decoy}"), 60))
            state = http.get(f"/operator/sessions/{sid}/state", headers=bearer)
            srv.note(sid, state.headers)
            assert state.json()["data"]["step_count"] == 2
            assert http.post(f"/sessions/{sid}/reset", json={}).json()["data"]["code"] == "AGENT_ONLY"
        check_owners(srv, names)
