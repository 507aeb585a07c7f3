"""What Linux's ``/proc`` says about a host process: its children, its tree, its state, its CPU.

Kernels, shells and desktops all read processes through these, so "a child", "gone" and "a zombie"
mean the same to every sandbox. Every reader answers for a process that is gone (or never was)
instead of raising: a sandbox's processes die at any moment, and that is no error.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["children", "cpu_ticks", "process_state", "process_tree", "running"]


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (of all its threads); none once it is gone."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found.extend(int(child) for child in f.read().split())
    return found


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants, parents first."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children(current))
    return found


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (which may hold spaces and
    parentheses itself, hence the split at the last one), or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def process_state(pid: int) -> str | None:
    """The kernel's state letter for ``pid`` (``R``, ``S``, ``Z`` for a zombie...), None once gone."""
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def running(pid: int | None) -> bool:
    """Whether ``pid`` exists and is neither a zombie nor dying."""
    return pid is not None and process_state(pid) not in (None, "Z", "X")


def cpu_ticks(pid: int) -> int | None:
    """The CPU time ``pid`` has used so far (user + system, in clock ticks), None once it is gone."""
    fields = _stat_fields(pid)
    return int(fields[11]) + int(fields[12]) if fields else None
