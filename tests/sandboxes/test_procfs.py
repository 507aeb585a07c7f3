"""The /proc readers every sandbox shares: a process's children, tree, state and CPU time."""

from __future__ import annotations

import subprocess
import sys
import time

from omnienv.sandboxes.procfs import children, cpu_ticks, process_state, process_tree, running


def test_a_tree_its_state_and_its_cpu_time_are_read_until_it_is_gone() -> None:
    # a parent that starts a child and prints its pid, then waits to be told to go
    script = (
        "import subprocess, sys; c = subprocess.Popen(['sleep', '60']); print(c.pid, flush=True); "
        "sys.stdin.read(); c.kill(); c.wait()"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert children(parent.pid) == [child]
        assert process_tree(parent.pid) == [parent.pid, child]
        assert running(parent.pid) and running(child)
        assert process_state(child) not in (None, "Z", "X")
        ticks = cpu_ticks(parent.pid)
        assert ticks is not None and ticks >= 0
    finally:
        parent.communicate("", timeout=30)
    # the parent exited and was reaped: it is gone
    assert process_state(parent.pid) is None and not running(parent.pid) and cpu_ticks(parent.pid) is None
    assert children(parent.pid) == [] and process_tree(parent.pid) == [parent.pid]
    assert not running(None)


def test_a_zombie_is_not_running() -> None:
    process = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while process_state(process.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)  # polling the kernel's state: nothing to wait on without reaping it
    try:
        assert process_state(process.pid) == "Z"
        assert not running(process.pid)
    finally:
        process.wait(timeout=10)
