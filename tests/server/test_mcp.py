"""OpenEnv's JSON-RPC session methods on ``POST /mcp`` and in ``{"type": "mcp"}`` frames."""

from __future__ import annotations

import json

import httpx
import pytest

from omnienv.envs.wordle import Wordle
from tests.polling import eventually
from tests.server.conftest import ws
from tests.server.test_ws import ask


def rpc(method: str, params: dict | None = None, request_id: int = 1) -> dict:
    return {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": request_id}


@pytest.fixture
def mcp(serve):
    url, manager = serve("wordle", max_sessions=2)
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
        client.manager = manager
        client.url = url
        yield client


def test_the_session_lifecycle_of_openenvs_mcp_tool_client(mcp) -> None:
    created = mcp.post("/mcp", json=rpc("openenv/session/create", request_id=2)).json()
    assert created["jsonrpc"] == "2.0" and created["id"] == 2
    session = created["result"]["session_id"]
    listed = mcp.post("/mcp", json=rpc("tools/list", {"session_id": session})).json()["result"]["tools"]
    assert {tool["name"] for tool in listed} == {"guess", "get_history"}
    assert listed[0]["inputSchema"] == Wordle.tools[listed[0]["name"]].parameters
    with ws(mcp.url, f"?session_id={session}") as connection:
        ask(connection, {"type": "reset", "data": {"task_id": "test/0004"}})
        call = rpc("tools/call", {"name": "guess", "arguments": {"word": "crane"}, "session_id": session}, 3)
        result = mcp.post("/mcp", json=call).json()["result"]
        assert result["is_error"] is False and result["data"].startswith("CRANE ")
        assert ask(connection, {"type": "state"})["data"]["step_count"] == 1  # a tool call is a step
        closing = mcp.post("/mcp", json=rpc("openenv/session/close", {"session_id": session})).json()
        assert closing["result"] == {"session_id": session, "closed": False, "closing": True}
        connection.send(json.dumps({"type": "close"}))
    eventually(lambda: mcp.manager.active == 0, what="the pending close done on detach")
    gone = mcp.post("/mcp", json=rpc("openenv/session/close", {"session_id": session})).json()
    assert gone["error"]["code"] == -32602 and "Unknown session_id" in gone["error"]["message"]


def test_a_detached_session_closes_at_once_and_close_keeps_attached_ones(mcp) -> None:
    session = mcp.post("/mcp", json=rpc("openenv/session/create")).json()["result"]["session_id"]
    with ws(mcp.url, f"?session_id={session}") as connection:
        ask(connection, {"type": "reset", "data": {}})
        connection.send(json.dumps({"type": "close"}))  # detaches; the HTTP-made session stays
    eventually(lambda: not mcp.manager.sessions[session].attached)
    assert mcp.manager.active == 1
    closed = mcp.post("/mcp", json=rpc("openenv/session/close", {"session_id": session})).json()
    assert closed["result"] == {"session_id": session, "closed": True, "closing": False}
    assert mcp.manager.active == 0


@pytest.mark.parametrize(
    ("body", "code", "mentions"),
    [
        (b"xx", -32700, "Parse error"),
        (b"{}", -32600, "Invalid request"),
        (
            json.dumps({"jsonrpc": "2.0", "method": "tools/list", "params": [1], "id": 4}).encode(),
            -32602,
            "Params must be an object",
        ),
        (json.dumps(rpc("resources/list")).encode(), -32601, "Method not found"),
        (json.dumps(rpc("tools/call", {"arguments": {}})).encode(), -32602, "'name'"),
        (json.dumps(rpc("tools/list", {"session_id": "nope"})).encode(), -32602, "Unknown session_id: nope"),
        (json.dumps(rpc("openenv/session/close")).encode(), -32602, "'session_id' is required"),
    ],
)
def test_bad_requests_get_json_rpc_errors_with_http_200(mcp, body, code, mentions) -> None:
    reply = mcp.post("/mcp", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == 200
    error = reply.json()["error"]
    assert error["code"] == code and mentions in error["message"]


def test_capacity_and_usage_errors_keep_our_codes_in_data(mcp) -> None:
    for _ in range(2):
        mcp.post("/mcp", json=rpc("openenv/session/create"))
    full = mcp.post("/mcp", json=rpc("openenv/session/create")).json()["error"]
    assert full["code"] == -32000 and full["data"] == {
        "code": "CAPACITY_REACHED",
        "active_sessions": 2,
        "max_sessions": 2,
    }
    session = next(iter(mcp.manager.sessions))
    not_reset = mcp.post(
        "/mcp", json=rpc("tools/call", {"name": "guess", "arguments": {"word": "crane"}, "session_id": session})
    ).json()["error"]
    assert not_reset["data"]["code"] == "NOT_RESET"


def test_a_sessionless_tool_call_uses_a_throwaway_env(mcp) -> None:
    result = mcp.post("/mcp", json=rpc("tools/call", {"name": "get_history"})).json()["result"]
    assert result["data"].endswith("Guesses used: 0/6")
    assert mcp.manager.active == 0


def test_mcp_frames_over_the_websocket_act_on_that_session(mcp) -> None:
    with ws(mcp.url) as connection:
        ask(connection, {"type": "reset", "data": {}})
        reply = ask(connection, {"type": "mcp", "data": rpc("tools/call", {"name": "get_history"}, 9)})
        assert reply["type"] == "mcp" and reply["data"]["id"] == 9
        assert reply["data"]["result"]["data"].endswith("0/6")
        own = next(iter(mcp.manager.sessions))
        refused = ask(connection, {"type": "mcp", "data": rpc("openenv/session/close", {"session_id": own})})
        assert refused["data"]["error"]["code"] == -32600
        assert ask(connection, {"type": "mcp", "data": {"nonsense": 1}})["data"]["error"]["code"] == -32600
        assert ask(connection, {"type": "state"})["data"]["step_count"] == 1
