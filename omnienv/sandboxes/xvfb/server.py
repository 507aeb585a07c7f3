"""The X server of one display: Xvfb on the host, with fixed arguments only.

- ``-displayfd`` makes Xvfb pick a free display number itself and write it once it accepts
  connections: no guessing, no readiness polling.
- It listens on no TCP port (``-nolisten tcp``): only on its Unix socket file, which each
  session's sandbox gets bound in alone, read-only, and on the abstract socket of the same name,
  which lives in the host's network namespace (every sandbox has an empty one of its own, so none
  can reach it). The abstract socket stays: it is what makes ``-displayfd`` skip a number in use
  (the socket file of a running server would simply be replaced).
- ``-extension MIT-SHM``: with shared memory, a client may ask the server (root, in the host's
  IPC namespace) to attach any System V segment by id, and the server checks the client's
  credentials, which for a sandboxed client are the host uid bwrap mapped it to (root). Captures
  go over the socket instead (about a millisecond more). ``-extension GLX``: no GL in the server.
- Its address space and open files are capped (``prlimit``), and the display joins it to the
  session's cgroup: what the agent's clients make the server allocate or compute counts against
  the session's limits.
- A watchdog process per display kills the server and deletes the session's files if the Python
  process that owns it dies without closing it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from omnienv.sandboxes.bubblewrap import LAUNCH_ENV
from omnienv.sandboxes.desktop import DisplayError
from omnienv.sandboxes.polling import wait

__all__ = ["REQUIRED_PROGRAMS", "XServer", "missing_programs"]

REQUIRED_PROGRAMS = ("Xvfb", "bwrap")
XVFB_OPEN_FILES = 1024
"""Enough for Xvfb's most clients (256 by default), and not the limit of the process that
started it, raised for its sessions' files (:mod:`omnienv.core.open_files`)."""
XVFB_FLAGS = ("-nolisten", "tcp", "-extension", "MIT-SHM", "-extension", "GLX", "-noreset")


def missing_programs(programs: Sequence[str] = REQUIRED_PROGRAMS) -> list[str]:
    return [name for name in programs if shutil.which(name) is None]


def _read_display_number(fd: int, process: subprocess.Popen[bytes], deadline: float) -> int:
    buffer = b""
    while not buffer.endswith(b"\n") and len(buffer) < 64:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DisplayError("Xvfb did not report a display number in time")
        ready, _ = wait([fd], (), min(remaining, 0.5))
        if ready:
            chunk = os.read(fd, 64)
            if not chunk:
                break
            buffer += chunk
        elif process.poll() is not None:
            break
    if not buffer.strip().isdigit():
        raise DisplayError(f"Xvfb exited (code {process.poll()}) before reporting a display number")
    return int(buffer)


class XServer:
    """One Xvfb process; ``socket`` is the only way in."""

    def __init__(self, process: subprocess.Popen[bytes], number: int, log: Path) -> None:
        self.process = process
        self.number = number
        self.log = log
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._lifeline = -1

    @property
    def name(self) -> str:
        return f":{self.number}"

    @property
    def socket(self) -> str:
        return f"/tmp/.X11-unix/X{self.number}"

    @classmethod
    def start(cls, width: int, height: int, depth: int, log: Path, deadline: float, memory_bytes: int) -> XServer:
        """Start Xvfb (its address space capped at ``memory_bytes``: a client's huge pixmap gets BadAlloc)."""
        read_fd, write_fd = os.pipe()
        screen = f"{width}x{height}x{depth}"
        try:
            with open(log, "wb") as out:
                process = subprocess.Popen(
                    [
                        "prlimit",
                        f"--as={memory_bytes}",
                        f"--nofile={XVFB_OPEN_FILES}",
                        "--core=0",
                        "--",
                        "Xvfb",
                        "-displayfd",
                        str(write_fd),
                        "-screen",
                        "0",
                        screen,
                        *XVFB_FLAGS,
                    ],
                    pass_fds=(write_fd,),
                    env=dict(LAUNCH_ENV),
                    cwd="/",
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    process_group=0,
                )
            os.close(write_fd)
            write_fd = -1
            try:
                number = _read_display_number(read_fd, process, deadline)
            except BaseException:
                process.kill()
                process.wait()
                raise
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        return cls(process, number, log)

    def alive(self) -> bool:
        return self.process.poll() is None

    def watch(self, root: Path, cgroups: Sequence[Path]) -> None:
        """Start the watchdog: on our death it kills the server and deletes ``root`` and ``cgroups``.

        It blocks reading a pipe whose only writer is this process; the kernel closes it on any
        death. Its arguments are fixed paths of ours, never anything from the agent.
        """
        read_fd, self._lifeline = os.pipe()
        mounts = " ".join(shlex.quote(str(root / name)) for name in ("work", "run"))
        groups = " ".join(shlex.quote(str(path)) for path in cgroups)
        script = (
            f"read _; kill -TERM {self.process.pid}; sleep 1; kill -KILL {self.process.pid}; "
            f'for m in {mounts}; do umount -l "$m" 2>/dev/null; done; rm -rf {shlex.quote(str(root))}; '
            f"for i in 1 2 3 4 5; do rmdir {groups} 2>/dev/null && break; sleep 1; done; true"
        )
        try:
            self._watchdog = subprocess.Popen(
                ["sh", "-c", script],
                stdin=read_fd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=dict(LAUNCH_ENV),
                cwd="/",
                start_new_session=True,
            )
        finally:
            os.close(read_fd)

    def stop(self) -> None:
        """Stop the watchdog, then the server (SIGTERM lets Xvfb remove its lock file and socket)."""
        if self._watchdog is not None:
            with contextlib.suppress(ProcessLookupError):
                self._watchdog.kill()
            self._watchdog.wait()
            self._watchdog = None
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1
        server = self.process
        with contextlib.suppress(ProcessLookupError):
            server.terminate()
        try:
            server.wait(timeout=2)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        self._remove_stale_files()

    def _remove_stale_files(self) -> None:
        """Delete the lock and socket a killed server left, if they are still ours.

        A server that exits on SIGTERM removes them itself, and by then another display may have
        taken the number: the lock file names its owner's pid, so only our own is touched.
        """
        lock = Path(f"/tmp/.X{self.number}-lock")
        try:
            owner = int(lock.read_text().strip())
        except (OSError, ValueError):
            return
        if self.process.returncode == 0 or owner != self.process.pid:
            return
        for stale in (Path(self.socket), lock):
            with contextlib.suppress(OSError):
                stale.unlink()

    def tail(self, limit: int = 600) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
