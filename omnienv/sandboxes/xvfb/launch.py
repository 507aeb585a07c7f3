"""Starting sandboxed programs for a display: the one spawning thread, the bubblewrap probe, logs, pids."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from omnienv.sandboxes.bubblewrap import HOME
from omnienv.sandboxes.sandbox import preflight

__all__ = ["AppLog", "on_spawner", "path_kind", "program_pid", "require_sandbox", "running"]

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


def _child(pid: int) -> int | None:
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children = f.read().split()
            if children:
                return int(children[0])
    return None


def running(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def program_pid(process: subprocess.Popen[bytes], timeout: float = 5.0) -> int | None:
    """The host pid of the program bwrap runs (bwrap -> its pid 1 -> the program), once it exists."""
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        init = _child(process.pid)
        program = _child(init) if init is not None else None
        if program is not None:
            return program
        time.sleep(0.001)
    return None


def path_kind(work_dir: Path, path: str) -> str | None:
    """What ``path`` names under ``work_dir``, walking each component with ``O_NOFOLLOW``."""
    parts = [part for part in path.removeprefix(HOME).split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    try:
        fd = os.open(work_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        mode = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode
    except OSError:
        return None
    finally:
        os.close(fd)
    if stat.S_ISLNK(mode):
        return "symlink"
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"
