"""The desktop tasks, one module per app, each task checked from the desktop's real state.

Ids are ``split/name`` and stable. Each module holds its app's ``TRAIN`` and ``TEST`` tasks;
the checks they use are in :mod:`omnienv.envs.desktop.checks` and
:mod:`omnienv.envs.desktop.workbook`.
"""

from __future__ import annotations

from omnienv.core import Task
from omnienv.envs.desktop.checks import DesktopTask
from omnienv.envs.desktop.tasks import calculator, editor, files, spreadsheet, terminal, windows

__all__ = ["DESKTOP_TASKS", "DesktopTask", "core_tasks", "find_task"]

_MODULES = (terminal, windows, calculator, editor, spreadsheet, files)

DESKTOP_TASKS: dict[str, DesktopTask] = {
    **{f"train/{task.id}": task for module in _MODULES for task in module.TRAIN},
    **{f"test/{task.id}": task for module in _MODULES for task in module.TEST},
}


def core_tasks(split: str) -> list[Task]:
    return [
        Task(task_id, split, {"instruction": task.instruction, "apps": list(task.apps)}, task.answer)
        for task_id, task in DESKTOP_TASKS.items()
        if task_id.startswith(f"{split}/")
    ]


def find_task(task_id: str) -> DesktopTask:
    return DESKTOP_TASKS[task_id]
