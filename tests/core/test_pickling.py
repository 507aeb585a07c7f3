"""The contract's values pickle as constructor calls: equal after the trip, smaller, subclasses intact."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass
from typing import Any

import pytest

from omnienv.core import (
    Failure,
    ImageBlock,
    Observation,
    State,
    StepResult,
    Task,
    TextBlock,
    ToolCall,
    ToolResult,
)
from omnienv.core.pickling import pickled_as_constructor_call

FAILURE = Failure("env_error", "tool 'x' raised KeyError")
IMAGE = ImageBlock(b"\x89PNG...", "image/jpeg")
OBSERVATION = Observation((TextBlock("marks"), IMAGE), True)
VALUES: list[Any] = [
    ToolCall("guess", {"word": "crane"}, "call_1"),
    ToolResult((TextBlock("hi"),), 0.5, True, {"success": True}),
    OBSERVATION,
    FAILURE,
    StepResult(OBSERVATION, 1.25, True, True, {"rubric": {"solved": 1.0}}, FAILURE),
    State("ep", 3, True, True, "test/0001", {"guesses": ["crane"]}, 1.5, FAILURE),
    TextBlock("plain"),
    IMAGE,
    Task("test/0001", "test", {"level": 2}, "crane"),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_every_field_survives_pickling_and_copying(value: Any) -> None:
    for protocol in (2, 5):
        assert pickle.loads(pickle.dumps(value, protocol)) == value
    assert copy.copy(value) == value and copy.deepcopy(value) == value
    assert value.__reduce_ex__(5)[0] is type(value)  # a constructor call, not a state dict


def test_a_batch_of_results_pickles_smaller_than_slots_do() -> None:
    results = [StepResult(Observation((TextBlock(f"step {i}"),))) for i in range(30)]
    default = pickle.dumps([object.__reduce_ex__(r, 5) for r in results], 5)
    assert len(pickle.dumps(results, 5)) < len(default)


@dataclass(slots=True)
class Marked(Observation):
    """A subclass with a field of its own: pickled Python's default way, so the field survives."""

    mark: str = ""


def test_a_subclass_keeps_what_it_adds() -> None:
    marked = Marked((TextBlock("x"),), False, "kept")
    assert pickle.loads(pickle.dumps(marked)) == marked and pickle.loads(pickle.dumps(marked)).mark == "kept"


def test_a_class_with_fields_the_constructor_does_not_take_is_refused() -> None:
    from dataclasses import field

    with pytest.raises(TypeError, match="constructor does not take"):

        @pickled_as_constructor_call
        @dataclass
        class Computed:
            a: int
            b: int = field(init=False, default=0)
