"""Stateless routes and session-less tool calls take a session slot: the cap holds for every environment."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.polling import eventually
from tests.server.conftest import ws
from tests.server.test_ws import ask

STEP = {"action": {"type": "call_tool", "tool_name": "ping", "arguments": {}}}
TOOL_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping", "arguments": {}}}


def full(reply: httpx.Response) -> None:
    assert reply.status_code == 503, reply.text
    data = reply.json()["data"]
    assert data["code"] == "CAPACITY_REACHED" and data["max_sessions"] == 2, data


def test_stateless_and_sessionless_calls_are_refused_when_full(serve, counted) -> None:
    url, manager = serve(counted, max_sessions=2)
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        first = http.post("/sessions").json()["session_id"]
        with ws(url) as socket:  # the second slot: a WebSocket's own session
            assert ask(socket, {"type": "reset", "data": {}})["type"] == "observation"
            assert counted.live == 2
            full(http.post("/reset", json={}))
            full(http.post("/step", json=STEP))
            full(http.get("/state"))
            error = http.post("/mcp", json=TOOL_CALL).json()["error"]
            assert error["data"]["code"] == "CAPACITY_REACHED", error
            assert counted.peak == 2 and manager.active == 2
        eventually(lambda: manager.active == 1)
        # one slot left: many concurrent stateless calls share it, and never more than the cap live
        calls = [
            lambda: http.post("/reset", json={}),
            lambda: http.post("/step", json=STEP),
            lambda: http.get("/state"),
            lambda: http.post("/mcp", json=TOOL_CALL),
        ] * 12
        with ThreadPoolExecutor(16) as pool:
            replies = list(pool.map(lambda call: call(), calls))
        statuses = {reply.status_code for reply in replies}
        assert statuses <= {200, 503} and 200 in statuses, statuses
        for reply in replies:
            if reply.status_code == 503:
                full(reply)
        assert counted.peak <= 2, f"{counted.peak} environments alive at once with max_sessions=2"
        eventually(lambda: counted.live == 1, what="throw-away environments closed")
        assert http.delete(f"/sessions/{first}").status_code == 200
    assert counted.live == 0 and manager.active == 0
