"""Agent-only mode: agents get tools over MCP, every reset/step/state elsewhere is refused."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from websockets.exceptions import ConnectionClosedOK

from omnienv.app import create_app
from omnienv.core import AgentOnlyError, UsageError
from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.protocol.codes import error_from_data
from omnienv.server import ServerConfig
from omnienv.server.mcp_sdk import OPENING_URI
from tests.polling import eventually
from tests.server.conftest import ws
from tests.server.test_mcp_sdk import leaf
from tests.server.test_ws import ask

TOKEN = "operator-secret"


def rpc(method: str, params: dict | None = None) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


@pytest.fixture
def agent_only(serve) -> Any:
    served = serve("wordle", agent_only=True, operator_token=TOKEN)
    with httpx.Client(base_url=served.url, trust_env=False, timeout=10) as client:
        client.served = served
        yield client


def operator(client: httpx.Client) -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


def refused(response: httpx.Response) -> None:
    assert response.status_code == 403, response.text
    data = response.json()["data"]
    assert data["code"] == "AGENT_ONLY" and "agent-only" in data["message"]
    assert isinstance(error_from_data(data), AgentOnlyError)


def test_the_error_is_a_typed_usage_error() -> None:
    assert issubclass(AgentOnlyError, UsageError) and AgentOnlyError.code == "AGENT_ONLY"


def test_a_token_is_made_when_none_is_given() -> None:
    app = create_app("wordle", ServerConfig(agent_only=True))
    assert len(app.state.manager.config.operator_token) >= 20


def test_a_websocket_is_refused_before_any_frame(agent_only) -> None:
    """A socket of its own is a session, as POST /sessions makes one: refused, closed, no slot kept."""
    with ws(agent_only.served.url) as connection:
        reply = json.loads(connection.recv(timeout=5))
        assert reply["type"] == "error" and reply["data"]["code"] == "AGENT_ONLY", reply
        assert isinstance(error_from_data(reply["data"]), AgentOnlyError)
        with pytest.raises(ConnectionClosedOK):
            ask(connection, {"type": "reset", "data": {}})
    assert agent_only.served.manager.active == 0


def test_http_reset_step_and_state_are_refused(agent_only) -> None:
    refused(agent_only.post("/reset", json={}))
    refused(
        agent_only.post(
            "/step", json={"action": {"type": "call_tool", "tool_name": "guess", "arguments": {"word": "crane"}}}
        )
    )
    refused(agent_only.get("/state"))
    refused(agent_only.post("/sessions"))  # agents neither open nor close sessions
    started = agent_only.post("/operator/sessions", json={}, headers=operator(agent_only))
    session = started.json()["session_id"]
    refused(agent_only.delete(f"/sessions/{session}"))
    refused(agent_only.post(f"/sessions/{session}/reset", json={}))
    refused(
        agent_only.post(
            f"/sessions/{session}/step",
            json={"type": "call_tool", "tool_name": "guess", "arguments": {"word": "crane"}},
        )
    )
    refused(agent_only.get(f"/sessions/{session}/state"))
    assert agent_only.post("/create_session", json={}).status_code == 404  # ORS/NeMo dialects are off
    assert agent_only.post("/seed_session", json={}).status_code == 404


def test_openenv_json_rpc_is_refused_but_tools_can_be_listed(agent_only) -> None:
    for method, params in (
        ("openenv/session/create", {}),
        ("openenv/session/close", {"session_id": "x"}),
        ("tools/call", {"name": "guess", "arguments": {"word": "crane"}}),
    ):
        error = agent_only.post("/mcp", json=rpc(method, params)).json()["error"]
        assert error["data"]["code"] == "AGENT_ONLY", method
    assert len(agent_only.post("/mcp", json=rpc("tools/list")).json()["result"]["tools"]) == 2


def test_operator_routes_need_the_token(agent_only) -> None:
    for headers in ({}, {"authorization": "Bearer wrong"}):
        answer = agent_only.post("/operator/sessions", json={}, headers=headers)
        assert answer.status_code == 401 and answer.json()["data"]["code"] == "AGENT_ONLY"
    assert agent_only.served.manager.active == 0


def test_mcp_initialize_needs_an_operator_episode(agent_only) -> None:
    async def connect() -> None:
        async with (
            streamable_http_client(f"{agent_only.served.url}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

    with pytest.raises(BaseException) as caught:
        asyncio.run(asyncio.wait_for(connect(), 30))
    assert "POST /operator/sessions" in str(leaf(caught.value))
    assert agent_only.served.manager.active == 0


def test_the_operator_starts_the_episode_and_the_agent_plays_it_over_mcp(agent_only) -> None:
    started = agent_only.post("/operator/sessions", json={"task_id": "test/0003"}, headers=operator(agent_only))
    assert started.status_code == 201
    session_id, path = started.json()["session_id"], started.json()["mcp_path"]
    assert path == f"/mcp?session_id={session_id}"
    assert "guess" in started.json()["data"]["observation"]["content"][0]["text"].lower()

    async def play() -> tuple[list[str], list[str]]:
        async with (
            streamable_http_client(agent_only.served.url + path) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            history: list[tuple[str, str]] = []
            texts = []
            for _ in range(6):
                result = await session.call_tool("guess", {"word": next_guess(history)})
                texts.append(result.content[0].text)
                marks = read_marks(texts[-1])
                assert marks is not None
                history.append(marks)
                if set(marks[1]) == {"🟩"}:
                    break
            # the agent cannot reach the infrastructure's view even knowing its session id
            refused(agent_only.post(f"/sessions/{session_id}/reset", json={}))
            return tools, texts

    tools, texts = asyncio.run(asyncio.wait_for(play(), 60))
    assert sorted(tools) == ["get_history", "guess"] and "Correct" in texts[-1]
    eventually(lambda: not agent_only.served.manager.sessions[session_id].attached)
    state = agent_only.get(f"/operator/sessions/{session_id}/state", headers=operator(agent_only)).json()
    assert state["data"]["done"] is True and state["data"]["step_count"] == len(texts)
    assert state["data"]["reward"] == 1.0 + 0.5 * (1 - len(texts) / 6)  # the score, for the operator alone
    again = agent_only.post(
        f"/operator/sessions/{session_id}/reset", json={"task_id": "test/0004"}, headers=operator(agent_only)
    )
    assert again.status_code == 200
    closed = agent_only.delete(f"/operator/sessions/{session_id}", headers=operator(agent_only)).json()
    assert closed == {"session_id": session_id, "closed": True, "closing": False}
    assert agent_only.served.manager.active == 0


def test_reading_the_opening_resource_answers_an_error_and_the_agent_plays_on(agent_only) -> None:
    """The MCP session reset nothing here, so the first observation is the operator's to hand over."""
    from mcp.shared.exceptions import MCPError

    started = agent_only.post("/operator/sessions", json={"task_id": "test/0003"}, headers=operator(agent_only))
    assert started.status_code == 201, started.text
    session_id, path = started.json()["session_id"], started.json()["mcp_path"]

    async def read_then_play() -> tuple[MCPError, Any]:
        async with (
            streamable_http_client(agent_only.served.url + path) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert (await session.list_resources()).resources == []  # listed only where it can be read
            with pytest.raises(MCPError) as caught:
                await session.read_resource(OPENING_URI)
            played = await session.call_tool("guess", {"word": "crane"})  # the same MCP session, still playing
            return caught.value, played

    error, played = asyncio.run(asyncio.wait_for(read_then_play(), 60))
    assert OPENING_URI in error.error.message and "agent-only" in error.error.message, error.error
    assert played.is_error is False and played.content[0].text.startswith("CRANE "), played
    state = agent_only.get(f"/operator/sessions/{session_id}/state", headers=operator(agent_only)).json()
    assert state["data"]["step_count"] == 1 and state["data"]["done"] is False
