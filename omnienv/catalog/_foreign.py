"""What every catalog environment shares: seed-range splits and foreign truncation.

Foreign libraries generate episodes from a seed, so a catalog task is a seed: ``train`` holds
seeds ``0..N-1`` and ``test`` a disjoint range far above it, the same on every machine and in
every dialect. Task ids (``train/00042``) never change while the split sizes stay the same.

A foreign reward is read through :func:`foreign_reward`: a library or server that hands back NaN, an
infinity, a string or a boolean has broken, and its episode is flagged rather than scored with a
number nobody meant.

A foreign step can say "truncated" (Gymnasium's TimeLimit, GEM's turn budget) while the contract's
tools can only say ``done``; :meth:`ForeignEnvironment.truncate` records it, and ``step`` copies
it onto the result and the episode ledger, so truncation reaches every dialect as truncation.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any, ClassVar

from omnienv.catalog.manifest import CatalogEntry
from omnienv.core import Environment, StepResult, Task, ToolCall
from omnienv.core.results import raise_bad_reward

__all__ = ["SPLIT_BASES", "ForeignEnvironment", "class_name", "foreign_reward", "seed_tasks"]

SPLIT_BASES = {"train": 0, "test": 1_000_000}
"""The first seed of each split; test seeds start far above any train split's size."""
DEFAULT_SPLITS = {"train": 1000, "test": 200}


def seed_tasks(split: str, size: int) -> list[Task]:
    """``size`` tasks of ``split``, one seed each, from the split's base seed up."""
    base = SPLIT_BASES[split]
    return [Task(f"{split}/{i:05d}", split, {"seed": base + i}) for i in range(size)]


def foreign_reward(value: Any, source: str, *, booleans: bool = False) -> float:
    """``value``, a reward ``source`` gave, as a finite float (``None``: no reward, 0; a boolean
    only where the source's contract allows one, as OpenEnv's does: 1 or 0).

    Raises :class:`EnvironmentFailure` for anything else (NaN, an infinity, ``1e400``, a string, a
    list, a boolean): the foreign side broke its own contract, so the step is flagged, never scored.
    """
    if value is None:
        return 0.0
    if booleans and isinstance(value, bool):
        return float(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):  # numpy's numbers too
        try:
            reward = float(value)
        except OverflowError:  # an int past a float's range: not a reward either
            reward = math.inf
        if math.isfinite(reward):
            return reward
    raise_bad_reward(value, source)


def class_name(catalog_name: str) -> str:
    """A name safe in routes, cookies and file names: ``reasoning-gym/ab`` -> ``reasoning-gym.ab``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", catalog_name.replace("/", ".", 1))


class ForeignEnvironment(Environment):
    """Base of catalog environments: tasks are seeds, ``entry`` says which foreign env this is."""

    entry: ClassVar[CatalogEntry]
    split_sizes: ClassVar[dict[str, int]] = DEFAULT_SPLITS
    _truncated: bool = False

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return seed_tasks(split, cls.split_sizes[split])

    @staticmethod
    def seed_of(task: Task | None, rng: Any) -> int:
        """The foreign seed of ``task`` (or one drawn from ``rng`` without a task)."""
        return int(task.data["seed"]) if task is not None else int(rng.randrange(2**31))

    def truncate(self) -> None:
        """The foreign environment cut the episode short: report it as truncation."""
        self._truncated = True

    def step(self, call: ToolCall) -> StepResult:
        self._truncated = False
        result = super().step(call)
        if self._truncated and result.failure is None and not result.done:
            result.truncated = True
            if self.episode is not None:
                self.episode.truncated = True
        return result


def make_class(base: type[ForeignEnvironment], entry: CatalogEntry, **attributes: Any) -> type[ForeignEnvironment]:
    """The environment class for ``entry``: a subclass of ``base`` named after the catalog name."""
    namespace = {
        "name": class_name(entry.name),
        "description": entry.description,
        "entry": entry,
        "splits": tuple(entry.splits),
        "split_sizes": dict(entry.splits),
        "max_turns": entry.max_turns,
        "__module__": base.__module__,
        "__doc__": entry.description,
        **attributes,
    }
    cls = type(class_name(entry.name).replace(".", "_").replace("-", "_"), (base,), namespace)
    return cls
