"""``WS /ws``: OpenEnv 0.10.0's frames byte for byte in shape, and every bad input survived."""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from omnienv.envs.wordle import Wordle
from tests.polling import eventually
from tests.server.conftest import BrokenInit, Crash, NotJson, NotJsonInline, ws


def ask(connection, message) -> dict:
    connection.send(message if isinstance(message, str | bytes) else json.dumps(message))
    return json.loads(connection.recv(timeout=5))


def call(tool: str, **arguments) -> dict:
    return {"type": "step", "data": {"type": "call_tool", "tool_name": tool, "arguments": arguments}}


def test_a_wordle_episode_in_openenv_frames(serve) -> None:
    url, manager = serve("wordle")
    answer = Wordle.task_index().find("test/0003", "test").answer
    with ws(url) as connection:
        reset = ask(connection, {"type": "reset", "data": {"task_id": "test/0003"}})
        assert reset["type"] == "observation"
        assert list(reset["data"]) == ["observation", "reward", "done"]
        assert reset["data"]["observation"]["metadata"] == {}
        assert "Wordle" in reset["data"]["observation"]["content"][0]["text"]

        step = ask(connection, call("guess", word="crane"))
        data = step["data"]
        assert (data["reward"], data["done"], data["truncated"], data["failure"]) == (0.0, False, False, None)
        observation = data["observation"]
        assert observation["tool_name"] == "guess" and observation["error"] is None
        assert "CRANE" in observation["result"]["data"] and observation["result"]["is_error"] is False
        assert answer not in json.dumps(step)

        win = ask(connection, call("guess", word=answer))["data"]
        assert win["done"] is True and win["reward"] > 1.0 and "rubric" in win["info"]

        state = ask(connection, {"type": "state"})
        assert state["type"] == "state"
        assert state["data"]["step_count"] == 2 and state["data"]["task_id"] == "test/0003"

        over = ask(connection, call("guess", word="crane"))
        assert over["type"] == "error" and over["data"]["code"] == "EPISODE_OVER"

        connection.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed) as closed:
            connection.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000
    eventually(lambda: manager.active == 0, what="session closed")


def test_list_tools_is_the_mcp_listing_and_costs_no_step(serve) -> None:
    url, _ = serve("wordle")
    with ws(url) as connection:
        listing = ask(connection, {"type": "step", "data": {"type": "list_tools"}})["data"]
        assert listing["reward"] is None and listing["done"] is False
        tools = {tool["name"]: tool for tool in listing["observation"]["tools"]}
        assert set(tools) == {"guess", "get_history"}
        assert tools["guess"]["input_schema"]["required"] == ["word"]
        ask(connection, {"type": "reset", "data": {"seed": 1}})
        ask(connection, {"type": "step", "data": {"type": "list_tools"}})
        assert ask(connection, {"type": "state"})["data"]["step_count"] == 0


def test_bad_input_gets_clear_errors_and_the_session_survives(serve) -> None:
    url, manager = serve("wordle", max_message_bytes=64 * 1024)
    with ws(url) as connection:
        ask(connection, {"type": "reset", "data": {"seed": 5}})
        cases = [
            ("not json", "INVALID_JSON", "Invalid JSON"),
            ("[1, 2]", "VALIDATION_ERROR", "JSON object"),
            ({"type": "bogus"}, "UNKNOWN_TYPE", "Unknown message type: bogus"),
            ({"type": "step", "data": {"type": "jump"}}, "VALIDATION_ERROR", "call_tool"),
            (
                {"type": "step", "data": {"type": "call_tool", "tool_name": "guess", "arguments": "crane"}},
                "VALIDATION_ERROR",
                "'arguments' of tool 'guess' must be a JSON object",
            ),
            ({"type": "reset", "data": {"seed": "seven"}}, "VALIDATION_ERROR", "'seed'"),
            ({"type": "reset", "data": {"task_id": "test/9999"}}, "TASK_ERROR", "no task 'test/9999'"),
            ({"type": "reset", "data": {"split": "dev"}}, "TASK_ERROR", "no split 'dev'"),
            (json.dumps({"type": "step", "data": {"pad": "x" * 100_000}}), "MESSAGE_TOO_LARGE", "65,536-byte limit"),
        ]
        for message, code, mentions in cases:
            reply = ask(connection, message)
            assert reply["type"] == "error", message
            assert reply["data"]["code"] == code and mentions in reply["data"]["message"], reply
        wrong_type = ask(connection, call("guess", word=12345))["data"]  # the agent's mistake: an observation
        assert wrong_type["observation"]["result"]["is_error"] is True
        assert wrong_type["observation"]["error"]["error_type"] == "invalid_args"
        assert wrong_type["info"]["error"]["code"] == "INVALID_ARGUMENTS"
        alive = ask(connection, call("guess", word="crane"))
        assert alive["type"] == "observation" and "CRANE" in alive["data"]["observation"]["result"]["data"]
    assert httpx.get(f"{url}/health", trust_env=False).json() == {"status": "healthy"}
    eventually(lambda: manager.active == 0)


def test_capacity_refusal_is_openenvs_accept_error_close(serve) -> None:
    url, manager = serve("wordle", max_sessions=2)
    with ws(url) as first, ws(url) as second:
        for connection in (first, second):
            ask(connection, {"type": "reset", "data": {}})
        with ws(url) as third:
            refusal = json.loads(third.recv(timeout=5))
            assert refusal == {
                "type": "error",
                "data": {
                    "message": refusal["data"]["message"],
                    "code": "CAPACITY_REACHED",
                    "active_sessions": 2,
                    "max_sessions": 2,
                },
            }
            assert refusal["data"]["message"].startswith("Server at capacity: 2/2 sessions active.")
            with pytest.raises(ConnectionClosed) as closed:
                third.recv(timeout=5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000
        assert ask(first, call("guess", word="crane"))["type"] == "observation"
    eventually(lambda: manager.active == 0)
    with ws(url) as again:
        assert ask(again, {"type": "reset", "data": {}})["type"] == "observation"


def test_attaching_to_an_http_session_and_unknown_ids(serve) -> None:
    url, manager = serve("wordle")
    with httpx.Client(base_url=url, trust_env=False) as http:
        session_id = http.post("/sessions").json()["session_id"]
        http.post(f"/sessions/{session_id}/reset", json={"task_id": "test/0001"})
        with ws(url, f"?session_id={session_id}") as connection:
            assert ask(connection, {"type": "state"})["data"]["task_id"] == "test/0001"
            with ws(url, f"?session_id={session_id}") as twice:
                refusal = json.loads(twice.recv(timeout=5))
                assert refusal["data"]["code"] == "SESSION_ERROR" and "already" in refusal["data"]["message"]
        assert manager.active == 1  # detaching keeps an HTTP-made session
        state = http.get(f"/sessions/{session_id}/state").json()
        assert state["data"]["task_id"] == "test/0001"
    with ws(url) as owner:
        ask(owner, {"type": "reset", "data": {}})
        owned = next(s for s in manager.sessions if s != session_id)
        with ws(url, f"?session_id={owned}") as intruder:  # a socket's own session is not shared
            assert json.loads(intruder.recv(timeout=5))["data"]["code"] == "SESSION_ERROR"
    with ws(url, "?session_id=no-such-session") as connection:
        refusal = json.loads(connection.recv(timeout=5))
        assert refusal["type"] == "error" and refusal["data"]["code"] == "SESSION_NOT_FOUND"
        with pytest.raises(ConnectionClosed):
            connection.recv(timeout=5)


def test_env_crash_is_a_failure_flag_not_a_dead_session(serve) -> None:
    url, _ = serve(Crash)
    with ws(url) as connection:
        ask(connection, {"type": "reset", "data": {}})
        crashed = ask(connection, call("boom"))["data"]
        assert crashed["failure"]["kind"] == "env_error" and "kaboom" in crashed["failure"]["message"]
        assert crashed["done"] is True and crashed["truncated"] is True
        assert crashed["reward"] is None  # a void episode has no reward: never a 0 to train on
        assert crashed["observation"]["error"]["error_type"] == "execution_error"
        assert ask(connection, {"type": "reset", "data": {}})["type"] == "observation"


@pytest.mark.parametrize("env", [NotJson, NotJsonInline], ids=["awaited", "inline"])
def test_a_result_json_cannot_hold_is_an_error_frame_and_the_connection_lives_on(serve, env) -> None:
    url, _ = serve(env)
    with ws(url) as connection:
        ask(connection, {"type": "reset", "data": {}})
        failed = ask(connection, call("visited"))
        assert failed["type"] == "error" and "not JSON serializable: set" in failed["data"]["message"], failed
        assert ask(connection, {"type": "reset", "data": {}})["type"] == "observation"


def test_an_env_that_cannot_be_built_is_refused_with_a_reason(serve) -> None:
    url, manager = serve(BrokenInit)
    with ws(url) as connection:
        refusal = json.loads(connection.recv(timeout=5))
        assert refusal["data"]["code"] == "ENV_FAILURE" and "no sandbox available" in refusal["data"]["message"]
    assert manager.active == 0


def test_binary_frames_work_and_giant_frames_only_cost_their_own_connection(serve) -> None:
    url, manager = serve("wordle", max_message_bytes=16 * 1024)  # uvicorn's own cap: 4x that
    with ws(url) as connection:
        assert ask(connection, json.dumps({"type": "reset", "data": {}}).encode())["type"] == "observation"
        connection.send(b'{"type": "step", "data": {"pad": "' + b"x" * 100_000 + b'"}}')
        with pytest.raises(ConnectionClosed) as closed:
            connection.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big
    eventually(lambda: manager.active == 0)
    with ws(url) as again:
        assert ask(again, {"type": "reset", "data": {}})["type"] == "observation"


def test_compression_is_declined_unless_enabled(serve) -> None:
    from websockets.sync.client import connect

    for enabled in (False, True):
        url, _ = serve("wordle", ws_compression=enabled)
        with connect(url.replace("http://", "ws://") + "/ws", proxy=None) as connection:  # asks for deflate
            extensions = connection.response.headers.get("Sec-WebSocket-Extensions", "")
            assert ("permessage-deflate" in extensions) is enabled
