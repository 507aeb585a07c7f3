"""The OpenEnv importer (``openenv+http://...``) against a server that answers outside the protocol
(tests/catalog/hostile_remote.py): each bad answer is a flagged failure of that step, bounded in
size and time, naming the problem and not the URL's password; the next episode starts as usual,
and no socket is left open on the server."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from omnienv.catalog import openenv_remote
from omnienv.core import StepResult, ToolCall, UnknownEnvironmentError, load_environment
from omnienv.server import running
from tests.catalog.hostile_remote import HostileOpenEnv, Send, assert_flagged, flood, openenv_observation, trickle
from tests.polling import eventually


def one_step(url: str) -> tuple[StepResult, Any]:
    """Reset the environment at ``url`` and step once: the result and the state after it."""
    env = load_environment(url)()
    try:
        env.reset()
        result = env.step(ToolCall("act", {"move": "left"}))
        return result, env.state()
    finally:
        env.close()


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (openenv_observation("NaN"), "not a finite number"),
        (openenv_observation("Infinity"), "not a finite number"),
        (openenv_observation("1e400"), "not a finite number"),
        (openenv_observation('"0.7"'), "not a finite number"),
        (openenv_observation('{"score": 1}'), "not a finite number"),
        (openenv_observation("1.0", '"no"'), "'done' is not true or false"),
        ('{"type": "observation", "data": {"observation": "moved", "reward": 1.0, "done": true}}', "not an object"),
        ("<html>busy</html>", "not JSON"),
        ("[1, 2]", "expected {'type'"),
        ('{"type": "observation", "data": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests too deep"),
        (None, "the connection was lost"),
        (openenv_observation(text="x" * (32 << 20)), "over 33,554,432 bytes"),
    ],
)
def test_an_answer_outside_the_protocol_is_flagged_and_the_next_episode_runs(answer: str | None, says: str) -> None:
    server = HostileOpenEnv(answer)
    with running(server) as url:
        assert_flagged(*one_step(f"openenv+{url}"), says)
        server.answer = openenv_observation("0.5")
        result, state = one_step(f"openenv+{url}")
        assert result.failure is None and result.reward == 0.5 and state.reward == 0.5
        eventually(lambda: server.open_sockets == 0, what="no socket left open on the server")


def test_a_boolean_reward_is_one_as_openenvs_observation_allows() -> None:
    with running(HostileOpenEnv(openenv_observation("true"))) as url:
        result, state = one_step(f"openenv+{url}")
    assert result.failure is None and result.reward == 1.0 and state.reward == 1.0


def test_schema_is_not_read_from_where_a_redirect_points() -> None:
    elsewhere = HostileOpenEnv(schema=json.dumps({"action": {"type": "object", "properties": {"x": {}}}}))
    with running(elsewhere) as other:
        moved = [(b"location", f"{other}/schema".encode())]
        redirect = HostileOpenEnv(schema=b"", schema_status=307, schema_headers=moved)
        with running(redirect) as url, pytest.raises(UnknownEnvironmentError, match="307"):
            load_environment(f"openenv+{url}")


def test_a_huge_schema_is_cut_off_not_read_whole() -> None:
    async def huge(send: Send) -> None:
        await flood(send, b'{"action": "', 300)

    with running(HostileOpenEnv(schema=huge)) as url, pytest.raises(UnknownEnvironmentError, match="the most read"):
        load_environment(f"openenv+{url}")


def test_a_schema_that_trickles_in_is_bounded_in_total_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openenv_remote, "MESSAGE_TIMEOUT_S", 1.0)

    async def slow(send: Send) -> None:
        head = json.dumps({"action": {"type": "object", "properties": {}}}).encode()
        await trickle(send, head, count=100, gap_s=0.2)  # 20 s of trailing spaces: valid JSON, if ever whole

    with running(HostileOpenEnv(schema=slow)) as url:
        started = time.monotonic()
        with pytest.raises(UnknownEnvironmentError, match="did not end within"):
            load_environment(f"openenv+{url}")
        assert time.monotonic() - started < 10


def test_the_urls_password_is_never_repeated() -> None:
    server = HostileOpenEnv("<html>")
    with running(server) as url:
        secret_url = f"openenv+{url.replace('//', '//agent:hunter2@')}"
        cls = load_environment(secret_url)
        result, state = one_step(secret_url)
    assert "hunter2" not in f"{cls.name} {cls.description} {cls.__doc__} {cls.__name__}"
    assert_flagged(result, state, "not JSON")
    assert "hunter2" not in result.failure.message  # type: ignore[union-attr]
