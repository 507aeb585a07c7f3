"""``splits_are_disjoint``: the in-process check that no task, and no task's answer, is in two splits.

A model trained on the train split must not have seen a test task, under its own id or another
(train/test contamination). The tasks are read through the class's
:class:`~omnienv.core.tasks.TaskIndex`, once per split, and compared in one pass of dicts.
"""

from __future__ import annotations

import json
from typing import Any

from omnienv.core.env import EnvironmentBase
from omnienv.core.tasks import Task

__all__ = ["splits_are_disjoint"]

EXAMPLES = 3


def splits_are_disjoint(env_class: type[EnvironmentBase]) -> str | None:
    """Fail when a task says a split other than the one listing it, when a task id is in two
    splits, or when two splits hold the same task under two ids: the same non-empty answer to the
    same ``data`` (Wordle's tasks are their answers). An answer to different data is no leak (a
    count, a number, a name two questions share), nor is one that several tasks of a split share:
    it is one of a few options (Doors' four doors), not what tells a task apart. Up to three
    examples of each problem are named, with the count."""
    splits = tuple(dict.fromkeys(env_class.splits))
    if len(splits) < 2:
        return None
    index = env_class.task_index()
    misplaced: list[str] = []
    id_split: dict[str, str] = {}
    shared_ids: dict[str, tuple[str, str]] = {}
    answers: dict[str, dict[str, tuple[int, Task]]] = {}  # answer -> split -> (tasks with it, the first)
    for split in splits:
        for task in index.split(split):
            if task.split != split:
                misplaced.append(f"'{task.id}' is listed in '{split}' but says split='{task.split}'")
            first = id_split.setdefault(task.id, split)
            if first != split and task.id not in shared_ids:
                shared_ids[task.id] = (first, split)
            key = _canonical(task.answer)
            if key is not None:
                by_split = answers.setdefault(key, {})
                count, seen = by_split.get(split, (0, task))
                by_split[split] = (count + 1, seen)
    problems = []
    if misplaced:
        fix = "set each Task's split to the split whose tasks() returns it"
        problems.append(_examples("tasks listed in one split that say another", misplaced, fix))
    if shared_ids:
        found = [f"'{task_id}' is in {a} and {b}" for task_id, (a, b) in shared_ids.items()]
        problems.append(_examples("task ids in two splits", found, "list each task in one split only"))
    found = [shown for by_split in answers.values() if (shown := _same_task(by_split))]
    if found:
        fix = "a model trained on one split would have seen the other's answers: keep each task to one split"
        problems.append(_examples("answers in two splits for the same data", found, fix))
    return "; ".join(problems) or None


def _same_task(by_split: dict[str, tuple[int, Task]]) -> str | None:
    """Two splits' tasks with this answer, where each is its split's only one and both have the same data."""
    if len(by_split) < 2 or any(count > 1 for count, _ in by_split.values()):
        return None
    first_with: dict[str, tuple[str, Task]] = {}
    for split, (_, task) in by_split.items():
        other, other_task = first_with.setdefault(json.dumps(task.data, sort_keys=True, default=repr), (split, task))
        if other_task is not task:
            return f"{_shown(task.answer)} is the answer of {_where(other, other_task)} and {_where(split, task)}"
    return None


def _canonical(answer: Any) -> str | None:
    """One string for equal JSON answers (keys sorted); None for no answer or one JSON can't carry."""
    if answer is None or answer == "":
        return None
    try:
        return json.dumps(answer, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def _shown(answer: Any) -> str:
    text = repr(answer) if isinstance(answer, str) else json.dumps(answer, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _where(split: str, task: Task) -> str:
    """A task as :meth:`TaskIndex.find` reads it: its id, with its split in front unless it has it."""
    return task.id if task.id.startswith(f"{split}/") else f"{split}/{task.id}"


def _examples(problem: str, found: list[str], fix: str) -> str:
    more = f" and {len(found) - EXAMPLES} more" if len(found) > EXAMPLES else ""
    return f"{len(found)} {problem} ({', '.join(found[:EXAMPLES])}{more}): {fix}"
