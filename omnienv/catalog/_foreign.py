"""What every catalog environment shares: seed-range splits and foreign truncation.

Foreign libraries generate episodes from a seed, so a catalog task is a seed: ``train`` holds
seeds ``0..N-1`` and ``test`` a disjoint range far above it, the same on every machine and in
every dialect. Task ids (``train/00042``) never change while the split sizes stay the same.

A foreign step can say "truncated" (Gymnasium's TimeLimit, GEM's turn budget) while the contract's
tools can only say ``done``; :meth:`ForeignEnvironment.truncate` records it, and ``step`` copies
it onto the result and the episode ledger, so truncation reaches every dialect as truncation.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from omnienv.catalog.manifest import CatalogEntry
from omnienv.core import Environment, StepResult, Task, ToolCall

__all__ = ["SPLIT_BASES", "ForeignEnvironment", "class_name", "seed_tasks"]

SPLIT_BASES = {"train": 0, "test": 1_000_000}
"""The first seed of each split; test seeds start far above any train split's size."""
DEFAULT_SPLITS = {"train": 1000, "test": 200}


def seed_tasks(split: str, size: int) -> list[Task]:
    """``size`` tasks of ``split``, one seed each, from the split's base seed up."""
    base = SPLIT_BASES[split]
    return [Task(f"{split}/{i:05d}", split, {"seed": base + i}) for i in range(size)]


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
