"""Tasks: what one episode is about, grouped in named splits (``train``, ``test``...).

A task's ``data`` is for the environment only; ``answer`` is what the agent must find, kept
apart so that checkers can prove it never reaches the agent before the episode ends.
"""

from __future__ import annotations

import hashlib
import operator
import os
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from omnienv.core.errors import TaskError, UsageError
from omnienv.core.pickling import pickled_as_constructor_call

__all__ = ["Task", "TaskIndex", "seed_index"]

_UNSEEDED = random.Random()
"""What draws a task when no seed is given. A generator of its own for each such draw would be
seeded from the OS each time, which costs more than the rest of a fast environment's reset."""
os.register_at_fork(after_in_child=_UNSEEDED.seed)  # forked workers must not draw alike
_MASK64 = (1 << 64) - 1


def seed_index(seed: int, count: int) -> int:
    """Which of ``count`` tasks ``seed`` picks: SplitMix64 of the seed, modulo ``count``.

    Not ``random.Random(seed).choice``: seeding a Mersenne Twister costs about 6 µs, a third of
    a fast environment's whole reset, and its first draw would also be the first draw of the
    generator ``setup`` gets (seeded alike), tying the task to the episode's own randomness. The
    mix is fixed here, so a seed picks the same task on every machine and Python version.
    """
    if count < 1:
        raise ValueError(f"no task to pick from (count={count})")
    seed = operator.index(seed)
    if not 0 <= seed <= _MASK64:  # negative or wider than 64 bits: fold every bit in, once
        width = (seed.bit_length() + 8) // 8
        digest = hashlib.blake2b(seed.to_bytes(width, "little", signed=True), digest_size=8).digest()
        seed = int.from_bytes(digest, "little")
    x = (seed + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (x ^ (x >> 31)) % count


@pickled_as_constructor_call
@dataclass(frozen=True, slots=True)
class Task:
    id: str
    split: str
    data: dict[str, Any] = field(default_factory=dict)
    answer: Any = None

    def to_dict(self, *, include_answer: bool = False) -> dict[str, Any]:
        """The infrastructure's view; the answer is left out unless asked for."""
        out: dict[str, Any] = {"id": self.id, "split": self.split, "data": self.data}
        if include_answer:
            out["answer"] = self.answer
        return out


class TaskIndex:
    """One environment's tasks by split, read once: the only rule for finding and drawing them.

    Every caller (``reset`` in-process, each server route, each dialect's dataset) comes here,
    so the same environment, split and seed give the same task wherever an episode starts.
    ``load(split)`` is read once per split and must return the same tasks each time.
    """

    def __init__(self, owner: str, splits: Sequence[str], load: Callable[[str], Iterable[Task]]) -> None:
        self.owner = owner
        self.splits = tuple(splits)
        self._load = load
        self._by_split: dict[str, tuple[tuple[Task, ...], dict[str, Task]]] = {}

    def __repr__(self) -> str:
        return f"TaskIndex({self.owner!r}, splits={self.splits!r})"

    @property
    def default_split(self) -> str | None:
        """The split a task is drawn from when none is named: the first one."""
        return self.splits[0] if self.splits else None

    def _split(self, split: str) -> tuple[tuple[Task, ...], dict[str, Task]]:
        loaded = self._by_split.get(split)
        if loaded is None:
            if split not in self.splits:
                known = ", ".join(self.splits) or "none"
                raise TaskError(f"{self.owner} has no split '{split}'; its splits: {known}")
            tasks = tuple(self._load(split))
            loaded = self._by_split[split] = (tasks, {task.id: task for task in tasks})
        return loaded

    def load(self) -> None:
        """Read every split now. A server does, off its event loop, as it starts: a split's first
        reading may take a while (Jupyter builds its tasks' data, a Harbor folder reads every
        task), and a reset that did it would hold every session the loop serves meanwhile."""
        for split in self.splits:
            self._split(split)

    def split(self, split: str) -> tuple[Task, ...]:
        """Every task of ``split``, in the environment's order."""
        return self._split(split)[0]

    def page(self, split: str, offset: int = 0, limit: int | None = None) -> tuple[Task, ...]:
        """Tasks ``offset`` to ``offset + limit`` of ``split`` (all the rest when ``limit`` is None)."""
        if offset < 0 or (limit is not None and limit < 0):
            raise TaskError(f"offset and limit must be >= 0, got offset={offset}, limit={limit}")
        tasks = self.split(split)
        return tasks[offset:] if limit is None else tasks[offset : offset + limit]

    def find(self, task_id: str, split: str | None = None) -> Task:
        """The task ``task_id``, which may carry its split (``"test/0003"``) or take ``split``
        (default: the first split)."""
        if split is None:
            split = task_id.split("/", 1)[0] if "/" in task_id else self.default_split
        if split is None:
            raise TaskError(f"{self.owner} has no tasks; reset it without a task id")
        by_id = self._split(split)[1]
        task = by_id.get(task_id) or by_id.get(f"{split}/{task_id}")
        if task is None:
            raise TaskError(f"no task '{task_id}' in split '{split}' of {self.owner}")
        return task

    def draw(self, seed: int | None, split: str | None = None) -> Task | None:
        """The task of ``split`` (default: the first) that ``seed`` picks; None without tasks."""
        split = split if split is not None else self.default_split
        if split is None:
            return None
        tasks = self.split(split)
        if not tasks:
            return None
        return _UNSEEDED.choice(tasks) if seed is None else tasks[seed_index(seed, len(tasks))]

    def choose(self, task: Task | str | None, seed: int | None, split: str | None = None) -> Task | None:
        """The task an episode runs: ``task`` itself, the task it names, or one drawn by ``seed``.

        Every reset comes here first, so a ``task`` or ``seed`` of the wrong type is refused here,
        naming what to pass, before any episode is touched."""
        if seed is not None and not hasattr(seed, "__index__"):  # numpy integers are integers too
            raise UsageError(f"seed must be an integer or None, got {type(seed).__name__} {seed!r}")
        if isinstance(task, Task):
            return task
        if task is None:
            return self.draw(seed, split)
        if not isinstance(task, str):
            raise UsageError(
                f"task must be a Task, a task id such as 'test/0003', or None, got {type(task).__name__} {task!r}"
            )
        return self.find(task, split)
