"""Rubric: the final reward of an episode as a weighted sum of named reward functions.

Each function receives the environment at the end of the episode and returns a float. Keeping
the parts separate (``RubricScore.parts``) lets trainers log them and lets authors see which part
of a reward moved.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from omnienv.core.errors import EnvironmentDefinitionError

__all__ = ["RewardFunction", "Rubric", "RubricScore"]

RewardFunction: TypeAlias = Callable[[Any], float] | Callable[[Any], Awaitable[float]]


@dataclass(slots=True)
class RubricScore:
    total: float
    parts: dict[str, float]


class Rubric:
    """``Rubric(solved, partial_credit, weights=[1.0, 0.5])``; weights default to 1."""

    def __init__(self, *functions: RewardFunction, weights: Sequence[float] | None = None) -> None:
        if not functions:
            raise ValueError("a Rubric needs at least one reward function")
        for fn in functions:
            if not callable(fn):  # it would fail only at the end of every episode, voiding each one
                raise EnvironmentDefinitionError(
                    f"a Rubric takes reward functions, fn(env) -> float, got {type(fn).__name__} {fn!r:.80}"
                )
        weights = list(weights) if weights is not None else [1.0] * len(functions)
        if len(weights) != len(functions):
            raise ValueError(f"{len(functions)} reward functions but {len(weights)} weights")
        names = [getattr(fn, "__name__", f"reward_{i}") for i, fn in enumerate(functions)]
        if len(set(names)) != len(names):
            raise ValueError(f"reward function names must be unique, got {names}")
        self.functions = tuple(zip(names, functions, weights, strict=True))
        self.is_async = any(inspect.iscoroutinefunction(fn) for fn in functions)

    def __repr__(self) -> str:
        parts = ", ".join(f"{name}*{weight:g}" for name, _, weight in self.functions)
        return f"Rubric({parts})"

    def score(self, env: Any) -> RubricScore:
        if self.is_async:
            raise TypeError(f"{self!r} has async reward functions: use 'await rubric.ascore(env)'")
        parts: dict[str, float] = {}
        total = 0.0
        for name, fn, weight in self.functions:
            value = parts[name] = _finite(name, fn(env))
            total += value * weight
        return RubricScore(total, parts)

    async def ascore(self, env: Any) -> RubricScore:
        parts: dict[str, float] = {}
        total = 0.0
        for name, fn, weight in self.functions:
            value = fn(env)
            value = parts[name] = _finite(name, await value if inspect.isawaitable(value) else value)
            total += value * weight
        return RubricScore(total, parts)


def _finite(name: str, value: Any) -> float:
    """A reward function's value as a float; NaN or an infinity is refused (the environment then
    fails the episode instead of scoring it with a number that poisons every mean it enters).
    A float or an int skips the ``numbers.Real`` check: an ABC's isinstance costs half a
    microsecond, a quarter of Wordle's whole rubric."""
    kind = type(value)
    if kind is not float and kind is not int and not isinstance(value, numbers.Real):
        raise TypeError(f"reward function '{name}' returned {kind.__name__} {value!r:.100}: return a float")
    number = float(value)
    if number - number:  # NaN or an infinity: x - x is 0 for every finite number
        raise ValueError(f"reward function '{name}' returned {value!r:.100}, not a finite number")
    return number
