"""Built-in policies by name: ``random`` for any environment, scripted solvers per environment."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable

from omnienv.core import EnvironmentBase
from omnienv.rollout.policy import Policy, RandomPolicy

__all__ = ["make_policy", "policy_names"]

# environment name -> policy name -> "module:Class" (classes taking no arguments)
SCRIPTED: dict[str, dict[str, str]] = {
    "wordle": {"solver": "omnienv.rollout.wordle_solver:WordleSolver"},
    "jupyter": {"oracle": "omnienv.rollout.jupyter_oracle:JupyterOracle"},
    "desktop": {"scripted": "omnienv.rollout.desktop_scripted:DesktopScripted"},
}


def policy_names(env_class: type[EnvironmentBase]) -> list[str]:
    return ["random", *SCRIPTED.get(env_class.name, {})]


def make_policy(name: str, env_class: type[EnvironmentBase], seed: int | None = None) -> Callable[[], Policy]:
    """A factory of fresh policies (one per worker), or a ValueError naming the choices."""
    if name == "random":
        strings = _vocabulary(env_class)
        return lambda: RandomPolicy(env_class.tools, seed=seed, strings=strings)
    target = SCRIPTED.get(env_class.name, {}).get(name)
    if target is None and ":" in name:
        target = name  # "package.module:Class", e.g. the scripted policy of a package from `omnienv new`
    if target is None:
        choices = policy_names(env_class)
        close = difflib.get_close_matches(name, choices, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise ValueError(f"no policy '{name}' for {env_class.name}.{hint} Choices: {', '.join(choices)}.")
    module, _, attribute = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load policy '{target}': {exc}") from exc
    return cls  # type: ignore[no-any-return]


def _vocabulary(env_class: type[EnvironmentBase]) -> list[str] | None:
    if env_class.name == "wordle":
        from omnienv.envs.wordle import accepted_words

        return sorted(accepted_words())
    return None
