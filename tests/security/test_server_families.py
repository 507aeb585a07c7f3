"""A session answers only on the route family that opened it: a NeMo Gym cookie's id is no HTTP session."""

from __future__ import annotations

import json

import httpx
from itsdangerous import URLSafeSerializer

from tests.security.test_server_ors import BODY, mint
from tests.server.conftest import on_loop, ws

ROW = {"responses_create_params": {"input": [{"role": "user", "content": "play"}]}, "task_id": "test/0004"}
VERIFY = {**ROW, "response": {"id": "r", "object": "response", "output": []}}
GUESS = {"type": "call_tool", "tool_name": "guess", "arguments": {"word": "crane"}}


def not_found(reply: httpx.Response) -> None:
    assert reply.status_code == 404, reply.text
    assert reply.json()["data"]["code"] == "SESSION_NOT_FOUND", reply.text


def foreign_routes_refuse(http: httpx.Client, url: str, session_id: str) -> None:
    not_found(http.post(f"/sessions/{session_id}/step", json=GUESS))
    not_found(http.post(f"/sessions/{session_id}/reset", json={}))
    not_found(http.get(f"/sessions/{session_id}/state"))
    not_found(http.delete(f"/sessions/{session_id}"))
    with ws(url, f"?session_id={session_id}") as socket:
        assert json.loads(socket.recv(timeout=5))["data"]["code"] == "SESSION_NOT_FOUND"
    rpc = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "guess", "arguments": {"word": "crane"}, "session_id": session_id},
    }
    assert "Unknown session_id" in http.post("/mcp", json=rpc).json()["error"]["message"]
    close = {**rpc, "method": "openenv/session/close", "params": {"session_id": session_id}}
    assert "Unknown session_id" in http.post("/mcp", json=close).json()["error"]["message"]


def test_a_nemo_gym_session_is_not_reachable_elsewhere(serve) -> None:
    url, manager = serve("wordle")
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        assert http.post("/seed_session", json=ROW).status_code == 200
        _, payload = URLSafeSerializer("unknown").loads_unsafe(http.cookies["omnienv___wordle"])
        session_id = payload["session_id"]  # the cookie is signed, not secret: anyone can read the id
        assert session_id in manager.sessions
        foreign_routes_refuse(http, url, session_id)
        assert session_id in manager.sessions
        output = http.post("/guess", json={"word": "slate"}).text  # the observation's text, as NeMo's agent reads it
        assert output.startswith("SLATE") and "5 guesses left" in output, "a foreign route's step counted"
        state = on_loop(manager, lambda: manager.state(manager.sessions[session_id]))
        assert state.step_count == 1
        verified = http.post("/verify", json=VERIFY).json()
        assert verified["mask_sample"] is False and verified["reward"] == 0.0
        assert http.post("/close_session").json() == {"closed": True}
    assert manager.active == 0


def test_ors_and_http_sessions_stay_in_their_families(serve) -> None:
    url, manager = serve("wordle")
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        sid = mint(http)
        http.post("/create", json=BODY, headers={"X-Session-ID": sid})
        (session_id,) = manager.sessions
        foreign_routes_refuse(http, url, session_id)
        assert http.post("/delete", headers={"X-Session-ID": sid}).json() == {"sid": sid}
        own = http.post("/sessions").json()["session_id"]  # an HTTP session is no ORS session either
        refused = http.post("/ping", headers={"X-Session-ID": own})
        assert refused.status_code == 404 and refused.json()["code"] == "SESSION_NOT_FOUND"
        assert http.delete(f"/sessions/{own}").status_code == 200
    assert manager.active == 0
