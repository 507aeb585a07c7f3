"""The ORS importer against a server that answers outside the protocol (tests/catalog/hostile_remote.py).

The rule: whatever the server sends, the step ends as a flagged failure (never a score), within a
bounded time and memory, with a message that names the problem and not the URL's password; and
the imported environment starts its next episode as if nothing had happened.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from websockets.sync.client import connect

from omnienv.app import create_app
from omnienv.catalog import _ors_client
from omnienv.core import EnvironmentDefinitionError, StepResult, ToolCall, load_environment
from omnienv.server import running
from tests.catalog.hostile_remote import HostileOrs, Send, assert_flagged, flood, ors_output, sse, trickle


def one_step(url: str) -> tuple[StepResult, Any]:
    """Reset the environment at ``url`` on ``t0`` and step once: the result and the state after it."""
    env = load_environment(url)()
    try:
        env.reset(task="t0")
        result = env.step(ToolCall("move", {}))
        return result, env.state()
    finally:
        env.close()


@pytest.mark.parametrize(
    ("reward", "finished"),
    [
        *[(reward, "true") for reward in ("NaN", "Infinity", "1e400", '"1"', "[1]", "true")],
        ("1.0", '"yes"'),
    ],
)
def test_a_reward_or_end_that_is_not_what_ors_says_is_flagged(reward: str, finished: str) -> None:
    server = HostileOrs(ors_output(reward, finished))
    with running(server) as url:
        result, state = one_step(f"ors+{url}")
        assert_flagged(result, state, "not a finite number" if finished == "true" else "'finished'")
        server.answer = ors_output("0.5")  # the same class, the next episode: scored as usual
        result, state = one_step(f"ors+{url}")
        assert result.failure is None and result.reward == 0.5 and state.reward == 0.5


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (sse(("end", "<html>busy</html>")), "not JSON"),
        (sse(("end", '{"ok": true, "output": ' + "[" * 100_000 + "]" * 100_000 + "}")), "nests too deep"),
        (sse(("error", "x" * 100_000)), "reported an error"),
    ],
)
def test_a_reply_outside_the_protocol_is_a_short_flagged_failure(answer: bytes, says: str) -> None:
    with running(HostileOrs(answer)) as url:
        assert_flagged(*one_step(f"ors+{url}"), says)


def test_a_huge_reply_is_cut_off_not_read_whole() -> None:
    async def huge(send: Send) -> None:
        await flood(send, b"event: end\ndata: ", 300)  # 300 MiB on one line

    with running(HostileOrs(huge)) as url:
        started = time.monotonic()
        assert_flagged(*one_step(f"ors+{url}"), "bytes, the most read of one reply")
        assert time.monotonic() - started < 30


def test_a_reply_that_trickles_in_is_bounded_in_total_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ors_client, "CALL_DEADLINE_S", 1.0)

    async def slow(send: Send) -> None:
        await trickle(send, b": ping\n", count=100, gap_s=0.2)  # 20 s, each byte well inside the read timeout

    with running(HostileOrs(slow)) as url:
        started = time.monotonic()
        assert_flagged(*one_step(f"ors+{url}"), "did not end in time")
        assert time.monotonic() - started < 10


def test_a_lone_surrogate_in_the_text_reaches_the_agent_as_a_replacement_character() -> None:
    """Left in, the lone half breaks the frame omnienv's own server encodes for the agent."""
    with running(HostileOrs(ors_output("0.0", "false", text='"a\\ud800"'))) as url:
        result, _ = one_step(f"ors+{url}")
        assert result.failure is None and result.observation.text == "a\ufffd"
        with running(create_app(load_environment(f"ors+{url}"))) as ours:
            with connect(ours.replace("http", "ws") + "/ws", proxy=None, open_timeout=5, close_timeout=2) as ws:
                ws.send(json.dumps({"type": "reset", "data": {}}))
                assert json.loads(ws.recv(timeout=10))["type"] == "observation"
                call = {"type": "call_tool", "tool_name": "move", "arguments": {}}
                ws.send(json.dumps({"type": "step", "data": call}))
                reply = json.loads(ws.recv(timeout=10))
        assert reply["type"] == "observation" and "a\ufffd" in json.dumps(reply, ensure_ascii=False)


def test_the_urls_password_is_never_repeated() -> None:
    server = HostileOrs(b"")  # an empty answer: the stream ends before its result
    with running(server) as url:
        cls = load_environment(f"ors+{url.replace('//', '//agent:hunter2@')}")
        result, state = one_step(f"ors+{url.replace('//', '//agent:hunter2@')}")
    assert "hunter2" not in f"{cls.name} {cls.description} {cls.__doc__} {cls.__name__}"
    assert_flagged(result, state, "ended before its result")
    assert "hunter2" not in result.failure.message  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        ([{"name": "move", "input_schema": None}, {"name": "move", "input_schema": None}], "two tools named 'move'"),
        ([{"name": "make move", "input_schema": None}], "must match"),
        ([{"name": "move", "input_schema": {"properties": {"to": {"type": "strng"}}}}], "not a valid JSON Schema"),
        ([{"name": "move", "input_schema": {"properties": []}}], "not a valid JSON Schema"),
        ([{"description": "no name"}], "without a name"),
    ],
)
def test_a_malformed_tool_listing_is_a_definition_error_when_imported(tools: list[Any], says: str) -> None:
    with running(HostileOrs(tools=tools)) as url, pytest.raises(EnvironmentDefinitionError, match=says):
        load_environment(f"ors+{url}")
