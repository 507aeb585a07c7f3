"""The checks of the rollout entry points' arguments, in one place.

``rollout``, ``plan_episodes``, ``arun_episodes`` and ``make_policy`` call :func:`check_arguments`
first, with the arguments they were given: an environment's name where its class belongs, a count
of the wrong type or out of range, is refused before anything runs (or any file is opened), with
a :class:`~omnienv.core.InvalidTypeError` or :class:`~omnienv.core.InvalidValueError` naming the
fix, not Python's own error from deep inside the loop.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from omnienv.core import InvalidTypeError, InvalidValueError
from omnienv.core.adapters import require_env_factory
from omnienv.core.registry import require_environment_class

__all__ = ["check_arguments", "require_policy_factory"]

_UNSET: Any = object()


def _given(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 80 else text[:77] + '...'}"


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _range(owner: str, name: str, value: object, least: int, meaning: str) -> None:
    if not _whole(value):
        raise InvalidTypeError(f"{owner}: {name} must be a whole number ({meaning}), got {_given(value)}")
    if value < least:  # type: ignore[operator]
        raise InvalidValueError(
            f"{owner}: invalid value for {name}: {value} is not in the range x>={least} ({meaning})"
        )


def _plans(owner: str, plans: object) -> None:
    from omnienv.rollout.loop import EpisodePlan

    if isinstance(plans, Sequence) and not isinstance(plans, str):
        stranger = next((plan for plan in plans if not isinstance(plan, EpisodePlan)), None)
        if stranger is None:
            return
        raise InvalidTypeError(
            f"{owner}: plans must hold EpisodePlans, one holds {_given(stranger)}: "
            "make them with omnienv.rollout.plan_episodes(env_class, episodes, split, seed)"
        )
    fix = f"plan_episodes(env_class, {plans!r}, split, seed)" if _whole(plans) else "plan_episodes(env_class, n)"
    raise InvalidTypeError(f"{owner}: plans must be a list of EpisodePlans, got {_given(plans)}: use {fix}")


def check_arguments(
    owner: str,
    *,
    env_class: object = _UNSET,
    episodes: object = _UNSET,
    split: object = _UNSET,
    seed: object = _UNSET,
    optional_seed: object = _UNSET,
    plans: object = _UNSET,
    concurrency: object = _UNSET,
    deadline_s: object = _UNSET,
    make_env: object = _UNSET,
    make_policy: object = _UNSET,
    policy: object = _UNSET,
    out: object = _UNSET,
) -> None:
    """Refuse the first of the given arguments that the rollout entry point ``owner`` cannot use."""
    if env_class is not _UNSET:
        require_environment_class(env_class, owner)
    if policy is not _UNSET and not isinstance(policy, str):
        raise InvalidTypeError(
            f"{owner}: name must be a policy's name ('random', one of the environment's own, or "
            f"'package.module:Class'), got {_given(policy)}"
        )
    if episodes is not _UNSET:
        _range(owner, "episodes", episodes, 0, "how many episodes")
    if split is not _UNSET and split is not None and not isinstance(split, str):
        raise InvalidTypeError(f"{owner}: split must be a split's name, such as 'test', or None, got {_given(split)}")
    if seed is not _UNSET and not _whole(seed):
        raise InvalidTypeError(f"{owner}: seed must be a whole number (episode i plays seed + i), got {_given(seed)}")
    if optional_seed is not _UNSET and optional_seed is not None and not _whole(optional_seed):
        raise InvalidTypeError(f"{owner}: seed must be a whole number or None, got {_given(optional_seed)}")
    if plans is not _UNSET:
        _plans(owner, plans)
    if concurrency is not _UNSET:
        _range(owner, "concurrency", concurrency, 1, "episodes played at once")
    if deadline_s is not _UNSET and deadline_s is not None:
        if isinstance(deadline_s, bool) or not isinstance(deadline_s, int | float):
            raise InvalidTypeError(f"{owner}: deadline_s must be seconds or None, got {_given(deadline_s)}")
        if not deadline_s > 0:
            raise InvalidValueError(
                f"{owner}: deadline_s must be > 0 seconds, or None for no deadline, got {deadline_s}"
            )
    if make_env is not _UNSET:
        require_env_factory(make_env, owner)
    if out is not _UNSET and out is not None and not isinstance(out, str | os.PathLike):
        raise InvalidTypeError(f"{owner}: out must be a path (a str or a Path) or None, got {_given(out)}")
    if make_policy is not _UNSET:
        require_policy_factory(make_policy)


def require_policy_factory(make_policy: object) -> None:
    """A Policy itself, or a policy's name, where a factory of them belongs would fail in every
    worker: refused before anything runs (or any file is opened)."""
    if not callable(make_policy):
        raise InvalidTypeError(
            f"make_policy must make a fresh Policy for each worker, got {type(make_policy).__name__} {make_policy!r}: "
            "pass omnienv.rollout.make_policy(name, env_class), or `lambda: policy` to share one"
        )
