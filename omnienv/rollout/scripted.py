"""Built-in policies by name: ``random`` for any environment, and each environment's own players
(its ``policies``: ``{"solver": "module:Class"}``), found through the environment class."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable

from omnienv.core import EnvironmentBase, InvalidValueError
from omnienv.rollout._arguments import check_arguments
from omnienv.rollout.policy import Policy, RandomPolicy

__all__ = ["make_policy", "policy_names"]


def policy_names(env_class: type[EnvironmentBase]) -> list[str]:
    return ["random", *env_class.policies]


def make_policy(name: str, env_class: type[EnvironmentBase], seed: int | None = None) -> Callable[[], Policy]:
    """A factory of fresh policies (one per worker), or an :class:`~omnienv.core.InvalidValueError`
    (a ValueError too) naming the choices."""
    check_arguments("make_policy", policy=name, env_class=env_class, optional_seed=seed)
    if name == "random":
        strings = env_class.random_strings()
        return lambda: RandomPolicy(env_class.tools, seed=seed, strings=strings)
    target = env_class.policies.get(name)
    if target is None and ":" in name:
        target = name  # "package.module:Class", e.g. the scripted policy of a package from `omnienv new`
    if target is None:
        choices = policy_names(env_class)
        close = difflib.get_close_matches(name, choices, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise InvalidValueError(f"no policy '{name}' for {env_class.name}.{hint} Choices: {', '.join(choices)}.")
    module, _, attribute = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise InvalidValueError(f"cannot load policy '{target}': {exc}") from exc
    if not isinstance(cls, type) or not callable(getattr(cls, "act", None)):
        raise InvalidValueError(
            f"'{target}' is not a policy: name a class with a 'name' and an async 'act(episode)' that returns "
            "the next ToolCall (omnienv.rollout.Policy)"
        )
    # A player that needs the environment's own tasks (a Harbor suite's oracle) is made for it.
    made_for = getattr(cls, "for_environment", None)
    factory: Callable[[], Policy] = (lambda: made_for(env_class)) if made_for is not None else cls
    return factory
