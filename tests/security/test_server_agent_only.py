"""Agent-only mode: agents cannot create or delete sessions, nor lock the agent out of its episode."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.server.conftest import ws

TOKEN = "operator-secret"
OPERATOR = {"authorization": f"Bearer {TOKEN}"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "intruder", "version": "1"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


@pytest.fixture
def agent_only(serve):
    served = serve("wordle", agent_only=True, operator_token=TOKEN)
    with httpx.Client(base_url=served.url, trust_env=False, timeout=10) as http:
        http.served = served
        yield http


def refused(reply: httpx.Response) -> None:
    assert reply.status_code == 403, reply.text
    data = reply.json()["data"]
    assert data["code"] == "AGENT_ONLY" and "/operator/sessions" in data["message"], data


def start(http: httpx.Client) -> str:
    reply = http.post("/operator/sessions", json={"task_id": "test/0003"}, headers=OPERATOR)
    assert reply.status_code == 201, reply.text
    return reply.json()["session_id"]


def test_agents_can_neither_create_nor_delete_sessions(agent_only) -> None:
    manager = agent_only.served.manager
    refused(agent_only.post("/sessions"))
    with ws(agent_only.served.url) as socket:  # a socket of its own would take a slot the operator needs
        reply = json.loads(socket.recv(timeout=5))
    assert reply["type"] == "error" and reply["data"]["code"] == "AGENT_ONLY", reply
    assert manager.active == 0
    session_id = start(agent_only)
    refused(agent_only.delete(f"/sessions/{session_id}"))
    assert session_id in manager.sessions
    closed = agent_only.delete(f"/operator/sessions/{session_id}", headers=OPERATOR).json()
    assert closed["closed"] is True and manager.active == 0


def second_socket(url: str, session_id: str) -> dict:
    with ws(url, f"?session_id={session_id}") as socket:
        return json.loads(socket.recv(timeout=5))


def test_a_second_attach_is_refused_and_the_first_keeps_playing(agent_only) -> None:
    url, manager = agent_only.served
    session_id = start(agent_only)
    # before the agent connects: a socket must not take the agent's episode
    early = second_socket(url, session_id)
    assert early["type"] == "error" and early["data"]["code"] == "SESSION_NOT_FOUND", early
    assert not manager.sessions[session_id].attached

    async def play() -> list[str]:
        async with (
            streamable_http_client(f"{url}/mcp?session_id={session_id}") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            texts = [(await session.call_tool("guess", {"word": "crane"})).content[0].text]
            late = await asyncio.to_thread(second_socket, url, session_id)
            assert late["type"] == "error" and late["data"]["code"] == "SESSION_NOT_FOUND", late
            async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
                again = await http.post(f"{url}/mcp?session_id={session_id}", json=INITIALIZE, headers=MCP_HEADERS)
            assert again.status_code == 409, again.text
            assert again.json()["error"]["data"]["code"] == "SESSION_ERROR"
            assert "already" in again.json()["error"]["message"]
            texts.append((await session.call_tool("guess", {"word": "slate"})).content[0].text)
            return texts

    texts = asyncio.run(asyncio.wait_for(play(), 60))
    assert texts[0].startswith("CRANE") and texts[1].startswith("SLATE"), texts
    state = agent_only.get(f"/operator/sessions/{session_id}/state", headers=OPERATOR).json()
    assert state["data"]["step_count"] == 2
