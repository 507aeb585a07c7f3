"""TextSession: one reply in, one turn out, for sync and async environments."""

from __future__ import annotations

import random

import pytest

from omnienv.core import EpisodeOverError, ImageBlock, Task, UnknownEnvironmentError
from omnienv.dialects._text import TextSession, prompt_text, resolve_env
from tests.dialects.envs import PNG, AsyncCounter, Counter, Snapshot


def test_a_reply_with_several_calls_is_one_turn() -> None:
    session = TextSession(Counter)
    assert session.reset(seed=1).startswith("Reach 3.")
    turn = session.step("<add>1</add><add>1</add>")
    assert (turn.text, turn.reward, turn.over, turn.info) == ("total 1\ntotal 2", 0.5, False, {"calls": 2})
    assert session.turns == 1


def test_calls_after_the_episode_ends_are_not_run() -> None:
    session = TextSession(Counter)
    session.reset()
    turn = session.step("<add>3</add><add>5</add>")
    assert turn.done and turn.text == "total 3"
    assert turn.reward == pytest.approx(1.25)  # the step's 0.25 plus the rubric's 1
    assert turn.info["rubric"] == {"reached": 1.0}
    with pytest.raises(EpisodeOverError):
        session.step("<add>1</add>")


def test_unparsable_replies_cost_a_turn_and_reach_the_limit() -> None:
    session = TextSession(Counter)
    session.reset()
    for _ in range(3):
        turn = session.step("no idea")
        assert not turn.over and turn.info["error"]["code"] == "INVALID_ACTION"
        assert "No tool call found" in turn.text
    assert session.step("still no idea").truncated


def test_agent_mistakes_are_observations_not_failures() -> None:
    session = TextSession(Counter)
    session.reset()
    turn = session.step('<tool_call>{"name": "add", "arguments": {"n": "lots"}}</tool_call>')
    assert turn.failure is None and not turn.over
    assert "invalid arguments for tool 'add'" in turn.text


def test_a_crash_is_a_failure_that_ends_the_turn() -> None:
    session = TextSession(Counter)
    session.reset()
    turn = session.step("<add>-1</add><add>1</add>")
    assert turn.failure is not None and turn.failure.kind == "env_error"
    assert "the counter broke" in turn.failure.message
    assert turn.over and turn.reward == 0.0


def test_async_environments_run_on_a_private_loop() -> None:
    session = TextSession(AsyncCounter())
    assert session.reset() == "Reach 3."
    turn = session.step('<tool_call>{"name": "add", "arguments": {"n": 3}}</tool_call>')
    assert turn.done and turn.reward == 1.0
    assert session.state().step_count == 1
    session.close()
    session.close()


def test_resolve_env_accepts_names_classes_and_instances() -> None:
    assert resolve_env("wordle").name == "wordle"
    assert isinstance(resolve_env(Counter), Counter)
    counter = Counter()
    assert resolve_env(counter) is counter
    with pytest.raises(UnknownEnvironmentError, match="Did you mean 'wordle'"):
        resolve_env("wordl")
    with pytest.raises(TypeError, match="registered name"):
        resolve_env(42)  # type: ignore[arg-type]


def test_prompt_text_matches_the_seeded_episode() -> None:
    assert prompt_text(Counter, None, 7) == TextSession(Counter).reset(seed=7)
    assert prompt_text(AsyncCounter, None, 7) == "Reach 3."


def test_reset_keeps_the_prompt_images_its_text_leaves_out() -> None:
    class Shown(Snapshot):
        def setup(self, task: Task | None, rng: random.Random) -> list[str | ImageBlock]:
            return ["Look.", ImageBlock(PNG)]

    session = TextSession(Shown)
    assert session.reset() == "Look." and session.prompt_images == (ImageBlock(PNG),)
    session = TextSession(Counter)
    assert session.reset() and session.prompt_images == ()
