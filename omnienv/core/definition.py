"""What an environment class must be, checked once when the class is made.

A mistake here (an async ``setup`` in a sync environment, a tool method that replaces ``reset``,
``splits = "train"``) would otherwise surface at the first reset or step, inside a server or a
trainer, as a ``TypeError`` far from its cause. Each is an :class:`EnvironmentDefinitionError`
naming the fix instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection
from typing import Any

from omnienv.core.errors import EnvironmentDefinitionError
from omnienv.core.rubric import Rubric
from omnienv.core.text_actions import grammar_of

__all__ = ["check_definition"]


def check_definition(cls: Any, *, is_async: bool, contract: Collection[str]) -> None:
    """Refuse ``cls`` unless its settings and methods fit its twin (``is_async``); ``contract``
    holds the names of the framework's own methods and settings, which no tool may take."""
    name = cls.__name__
    turns = cls.max_turns
    if turns is not None and (type(turns) is not int or turns < 1):
        raise EnvironmentDefinitionError(f"{name}.max_turns must be a whole number >= 1 or None, got {turns!r}")
    if not isinstance(cls.splits, tuple | list) or not all(isinstance(s, str) and s for s in cls.splits):
        raise EnvironmentDefinitionError(
            f"{name}.splits must be a tuple of split names, e.g. ('train', 'test'), got {cls.splits!r}"
        )
    if cls.rubric is not None and not isinstance(cls.rubric, Rubric):
        raise EnvironmentDefinitionError(f"{name}.rubric must be a Rubric")
    if not isinstance(inspect.getattr_static(cls, "tasks"), classmethod):
        raise EnvironmentDefinitionError(f"{name}.tasks must be a classmethod: put @classmethod above it")
    try:
        inspect.signature(cls.setup).bind(cls, None, None)
    except TypeError:
        raise EnvironmentDefinitionError(f"{name}.setup must take (self, task, rng)") from None
    grammar_of(cls)  # text_actions: each tag a tool, each argument one of its own
    functions = [spec.function for spec in cls.tools.values()]
    for method in contract:
        if any(inspect.getattr_static(cls, method, None) is function for function in functions):
            raise EnvironmentDefinitionError(
                f"tool method {name}.{method} replaces the environment's own '{method}': name the method "
                f"otherwise; @tool(name='{method}') still shows it to the agent under that name"
            )
    for method in ("setup", "teardown"):
        if inspect.iscoroutinefunction(getattr(cls, method)) is not is_async:
            fix = "make it 'async def' or subclass Environment" if is_async else "subclass AsyncEnvironment instead"
            raise EnvironmentDefinitionError(f"{name}.{method} is {'not ' if is_async else ''}async: {fix}")
    if is_async:
        return
    for spec in cls.tools.values():
        if spec.is_async:
            raise EnvironmentDefinitionError(
                f"tool '{spec.name}' of {name} is async: subclass AsyncEnvironment instead"
            )
    if cls.rubric is not None and cls.rubric.is_async:
        raise EnvironmentDefinitionError(f"{name}.rubric has async reward functions: subclass AsyncEnvironment instead")
