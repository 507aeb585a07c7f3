"""reasoning-gym's procedural datasets as single-turn environments with an ``answer`` tool.

Each dataset is generated from a seed per item (reasoning-gym draws item ``i`` of a dataset made
with ``seed=s`` from ``s + i``), so ``train`` is the dataset made from seed 0 and ``test`` the one
made from the test split's base seed: disjoint items, the same on every machine. The prompt is
the item's question; the reward is the library's own scorer, ``dataset.score_answer``.

reasoning-gym is imported only when an environment of it is loaded (``pip install
'omnienv[reasoning-gym]'``).
"""

from __future__ import annotations

import importlib
import inspect
import random
from collections.abc import Mapping
from functools import cache
from typing import Any, ClassVar

from omnienv.catalog._foreign import DEFAULT_SPLITS, SPLIT_BASES, ForeignEnvironment, foreign_reward, make_class
from omnienv.catalog.manifest import CatalogEntry
from omnienv.core import Task, ToolResult, tool

__all__ = ["ReasoningGymEnvironment", "candidates", "environment", "probe", "version"]

SOURCE = "reasoning-gym"


@cache
def _dataset(name: str, split: str, size: int) -> Any:
    """One split of one dataset; items are generated on first access, not here."""
    reasoning_gym = importlib.import_module("reasoning_gym")
    return reasoning_gym.create_dataset(name, seed=SPLIT_BASES[split], size=size)


class ReasoningGymEnvironment(ForeignEnvironment):
    """A reasoning-gym dataset: read the question, call ``answer`` once."""

    extras = ("reasoning-gym",)

    max_turns = 1
    text_actions: ClassVar[Mapping[str, str | None]] = {"answer": "answer"}
    _item: dict[str, Any]

    def _item_for(self, task: Task | None, rng: random.Random) -> tuple[Any, dict[str, Any]]:
        split = task.split if task is not None else "train"
        dataset = _dataset(self.entry.target, split, self.split_sizes[split])
        index = self.seed_of(task, rng) - SPLIT_BASES[split] if task is not None else rng.randrange(len(dataset))
        item: dict[str, Any] = dataset[index]
        return dataset, item

    def render_prompt(self, task: Task | None, rng: random.Random) -> str:
        return str(self._item_for(task, rng)[1]["question"])

    def setup(self, task: Task | None, rng: random.Random) -> str:
        self._dataset, self._item = self._item_for(task, rng)
        return str(self._item["question"])

    @tool
    def answer(self, answer: str) -> ToolResult:
        """Submit your final answer. The episode ends and the answer is scored.

        Args:
            answer: Your answer, in exactly the format the question asks for.
        """
        score = foreign_reward(self._dataset.score_answer(answer, self._item), "reasoning-gym's score_answer")
        return ToolResult.of(f"Answer submitted; score {score:g}.", reward=score, done=True, info={"score": score})


def environment(entry: CatalogEntry) -> type[ForeignEnvironment]:
    return make_class(ReasoningGymEnvironment, entry)


# -- the manifest (scripts/catalog_manifest.py) ---------------------------------------------------


def version() -> str:
    from importlib.metadata import version as installed

    return installed("reasoning-gym")


def candidates() -> list[CatalogEntry]:
    """Every registered dataset, described from the live library without generating items."""
    factory = importlib.import_module("reasoning_gym.factory")
    found = []
    for name in sorted(factory.DATASETS):
        dataset_class = factory.DATASETS[name][0]
        doc = (inspect.getdoc(dataset_class) or "").split("\n\n")[0].replace("\n", " ").strip()
        found.append(
            CatalogEntry(
                name=f"{SOURCE}/{name}",
                source=SOURCE,
                target=name,
                kind="single-turn",
                description=doc or f"reasoning-gym's {name} dataset.",
                tools=("answer",),
                splits=dict(DEFAULT_SPLITS),
                offline=True,
                max_turns=1,
            )
        )
    return found


def probe(entry: CatalogEntry) -> None:
    """Generate one item of each split and score its own answer; raises when the dataset can't."""
    for split in entry.splits:
        dataset = _dataset(entry.target, split, entry.splits[split])
        item = dataset[0]
        dataset.score_answer(item["answer"], item)
