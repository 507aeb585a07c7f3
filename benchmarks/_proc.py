"""The /proc readings behind the benchmarks' CPU and memory figures, each rule written once.

The sandboxes' CPU (``_sandboxed.py``), a tree of workers' (``workers.py``) and a server's
(``_harness.ServerProcess``) all come from ``_harness.cpu_ticks`` (kept there because
``ui_startup.py`` imports ``_harness`` alone), so their tables can be set side by side. Memory comes
from ``smaps_rollup``, where PSS splits shared pages among the processes that share them. Kept
apart from the loops, which then read as what they measure rather than how the kernel reports it.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Iterable
from pathlib import Path

from benchmarks._harness import CLK_TCK, cpu_ticks

__all__ = [
    "cpu_s",
    "host_cpu_s",
    "leftovers",
    "machine_jiffies",
    "memory_kb",
    "tree_cpu_s",
    "trimmed_rss_kb",
]


def cpu_s(pids: Iterable[int]) -> float:
    """User plus system CPU seconds ``pids`` used so far (a process gone meanwhile counts nothing)."""
    ticks = 0
    for pid in pids:
        try:
            ticks += cpu_ticks(pid)
        except OSError:
            continue
    return ticks / CLK_TCK


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and every process under it (a server's supervisor and its workers)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += cpu_ticks(current) / CLK_TCK
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(child) for child in children)
    return total


def host_cpu_s() -> float:
    """CPU seconds of this process and of its children that ended (a reference's subprocesses)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far, in clock ticks."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def memory_kb(pids: Iterable[int]) -> tuple[int, int]:
    """(RSS, PSS) in KiB summed over ``pids``; a process gone meanwhile counts nothing."""
    rss = pss = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Rss:"):
                rss += int(line.split()[1])
            elif line.startswith("Pss:"):
                pss += int(line.split()[1])
    return rss, pss


def trimmed_rss_kb() -> int:
    """This process's RSS once glibc has given back the free memory it keeps.

    Steps that run in many threads at once (a screenshot's 3 MB buffers on each display's X
    thread) leave freed memory in glibc's heaps, which RSS still counts; ``malloc_trim`` returns
    it, so the difference tells retained-but-free memory from memory in use. 0 without glibc.
    """
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        return 0
    return memory_kb([os.getpid()])[0]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


def leftovers(pids: Iterable[int], wait_s: float = 5.0) -> list[int]:
    """Which of ``pids`` are still running after up to ``wait_s`` seconds (cleanup's proof)."""
    deadline = time.monotonic() + wait_s
    while True:
        left = sorted(pid for pid in pids if _alive(pid))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)
