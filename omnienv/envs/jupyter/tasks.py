"""The Jupyter tasks: 46 families x 5 variants (230 tasks), each with data files made from its seed.

A family (:mod:`.families`) is a function of a seeded ``random.Random`` that returns the question,
the files the episode starts with, and the exact answer, computed in plain Python. Most families
are data analysis over CSV, TSV, JSON, JSONL, log and text files; a minority are algorithmic.
Files are rebuilt from the same seed for every task, so the task list stays small and every
episode starts clean. Variants 0-2 form the ``train`` split, 3-4 the ``test`` split: the test
split holds unseen data for every family, not unseen families.
"""

from __future__ import annotations

import random
from functools import cache

from omnienv.core import Task
from omnienv.envs.jupyter.families import ALL, Built, Family

__all__ = ["FAMILIES", "VARIANTS", "Built", "build", "jupyter_tasks"]

VARIANTS = {"train": (0, 1, 2), "test": (3, 4)}
FAMILIES: dict[str, Family] = {family.name: family for family in ALL}


@cache
def build(family: str, variant: int) -> Built:
    """The task ``family``/``variant``, the same on every machine and every call."""
    return FAMILIES[family](random.Random(f"omnienv-jupyter:{family}:{variant}"))


@cache
def jupyter_tasks(split: str) -> tuple[Task, ...]:
    tasks = []
    for family in FAMILIES:
        for variant in VARIANTS[split]:
            built = build(family, variant)
            data = {
                "family": family,
                "variant": variant,
                "question": built.question,
                "files": sorted(built.files),
                "params": built.params,
                "tolerance": built.tolerance,
            }
            tasks.append(Task(f"{split}/{family}-{variant}", split, data, built.answer))
    return tuple(tasks)
