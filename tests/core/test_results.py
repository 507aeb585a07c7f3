"""A step's result from its tool's output: the field-by-field fast path equals the constructors."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, fields, replace
from typing import Any

import pytest

from omnienv.core import (
    AgentCausedEnd,
    EpisodeLedger,
    ImageBlock,
    Observation,
    StepResult,
    TextBlock,
    ToolError,
    ToolResult,
)
from omnienv.core.results import record_step


@dataclass(slots=True)
class MarkedResult(ToolResult):
    """A tool's own ToolResult subclass: it takes the constructors' way."""

    mark: str = ""


def test_a_tool_result_builds_what_the_constructors_build() -> None:
    info = {"success": True}
    output = ToolResult((TextBlock("CRANE"), ImageBlock(b"png")), 0.5, True, info)
    result = record_step(EpisodeLedger(), output, None)
    expected = StepResult(Observation(output.content), 0.5, True, False, info)
    assert type(result) is StepResult and type(result.observation) is Observation
    for cls, built, made in ((StepResult, result, expected), (Observation, result.observation, expected.observation)):
        # every field set: one that a new field left unset would raise AttributeError here
        assert [getattr(built, f.name) for f in fields(cls)] == [getattr(made, f.name) for f in fields(cls)]
    assert result == expected and repr(result) == repr(expected)
    assert pickle.loads(pickle.dumps(result)) == expected
    assert replace(result, reward=1.0) == replace(expected, reward=1.0)


def test_a_tool_result_subclass_gives_the_same_fields() -> None:
    output = MarkedResult((TextBlock("hi"),), 0.25, False, {"k": 1}, mark="x")
    result = record_step(EpisodeLedger(), output, None)
    assert result == StepResult(Observation((TextBlock("hi"),)), 0.25, False, False, {"k": 1})


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("plain", StepResult(Observation((TextBlock("plain"),)))),
        ([TextBlock("a"), "b"], StepResult(Observation((TextBlock("a"), TextBlock("b"))))),
        (
            ToolError("no such word"),
            StepResult(
                Observation((TextBlock("no such word"),), True),
                info={"error": {"code": "TOOL_ERROR", "message": "no such word"}},
            ),
        ),
        (
            AgentCausedEnd("kernel died", reason="kernel_died"),
            StepResult(
                Observation((TextBlock("kernel died"),), True),
                done=True,
                info={"ended_by_agent": {"reason": "kernel_died", "message": "kernel died"}},
            ),
        ),
    ],
    ids=["str", "blocks", "agent_error", "agent_end"],
)
def test_other_outputs(output: Any, expected: StepResult) -> None:
    assert record_step(EpisodeLedger(), output, None) == expected


@pytest.mark.parametrize("done", [False, True])
def test_the_last_turn_truncates_unless_the_episode_ended_by_its_rules(done: bool) -> None:
    episode = EpisodeLedger()
    first = record_step(episode, ToolResult((TextBlock("1"),), 0.5), 2)
    last = record_step(episode, ToolResult((TextBlock("2"),), 0.25, done), 2)
    assert not first.truncated and last.truncated is not done and last.done is done
    assert (episode.steps, episode.reward, episode.done, episode.truncated) == (2, 0.75, done, not done)


@pytest.mark.parametrize("arguments", [{"word": "a" * 2_000_000}, {"word": ["a" * 100_000]}])
def test_an_invalid_action_quotes_at_most_the_start_of_what_the_agent_sent(arguments: dict[str, Any]) -> None:
    """An error quotes the agent's arguments: two megabytes sent must not come back on every turn."""
    from omnienv.core import ToolCall, as_sync
    from omnienv.core.results import ERROR_CHARS
    from omnienv.envs.wordle import Wordle

    env = as_sync(Wordle())
    try:
        env.reset(seed=1)
        result = env.step(ToolCall("guess", arguments))
    finally:
        env.close()
    text = result.observation.text
    assert result.observation.is_error and ERROR_CHARS < len(text) < ERROR_CHARS + 60, len(text)
    assert text.endswith("more characters not shown)") and result.info["error"]["message"] == text
