"""Starting sandboxed programs for a display: the one spawning thread, the bubblewrap probe, logs, pids."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from omnienv.sandboxes.procfs import children
from omnienv.sandboxes.upkeep import preflight

__all__ = ["AppLog", "on_spawner", "program_pid", "require_sandbox"]

T = TypeVar("T")


require_sandbox = preflight
"""bubblewrap must run here: a desktop never runs the agent's programs unsandboxed (see :func:`preflight`)."""


SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="omnienv-desktop-spawn")
"""The one thread that starts sandboxed programs: bubblewrap's ``--die-with-parent`` follows the
*thread* that forked it, and this one lives as long as the process (worker threads of an event
loop's executor do not: ``asyncio.run`` ends them, and every app they had started with them)."""


def on_spawner(fn: Callable[[], T]) -> T:
    return SPAWNER.submit(fn).result()


class AppLog:
    """Where the apps' stdout and stderr go: a non-blocking pipe whose tail the host keeps (for diagnosis)."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._tail = b""

    def tail(self) -> str:
        with contextlib.suppress(OSError):
            while chunk := os.read(self.read_fd, 65536):
                self._tail = (self._tail + chunk)[-2000:]
        return self._tail.decode("utf-8", "replace").strip()[-600:]

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def program_pid(process: subprocess.Popen[bytes], timeout: float = 5.0) -> int | None:
    """The host pid of the program bwrap runs (bwrap -> its pid 1 -> the program), once it exists."""
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        init = children(process.pid)
        program = children(init[0]) if init else []
        if program:
            return program[0]
        time.sleep(0.001)
    return None
