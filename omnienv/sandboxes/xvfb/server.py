"""The X server of one display: Xvfb in a sandbox of its own, with fixed arguments only.

- **Its own sandbox** (bubblewrap): the host's system read-only (no home, no project, no other
  session), a private ``/tmp`` in memory, no ``/proc``, its own IPC and UTS namespaces, and a host
  user of its own (:mod:`~omnienv.sandboxes.xvfb.users`), with no capability and no way to gain one.
  An X server is a large C program that every client on the display talks to: one that a
  hostile client took over reaches nothing of the host's. It keeps the host's pid namespace (the
  desktop reads windows' owners from it) and network namespace (see below).
- ``-displayfd`` makes Xvfb pick a free display number itself and write it once it accepts
  connections: no guessing, no readiness polling.
- It listens on no TCP port (``-nolisten tcp``). Its Unix socket file lands in the session's own
  socket directory (``socket_dir``, mounted at ``/tmp/.X11-unix``), which each of the session's
  sandboxes gets read-only, alone; no other display's socket is in it, and the host's
  ``/tmp/.X11-unix`` is never touched. Its abstract socket of the same name lives in the host's
  network namespace: the host's own connections use it, no sandbox can reach it (each has an empty
  network namespace of its own), and it is what makes ``-displayfd`` skip a number in use.
- ``-extension MIT-SHM``: with shared memory, a client may ask the server to attach any System V
  segment by id. Captures go over the socket instead (about a millisecond more).
  ``-extension GLX``: no GL in the server.
- Its address space, processes and open files are capped (``prlimit``), and the display joins it
  to the session's cgroup: what the agent's clients make the server allocate or compute counts
  against the session's limits.
- A watchdog process per display kills the server and deletes the session's files if the Python
  process that owns it dies without closing it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from omnienv.sandboxes.bubblewrap import LAUNCH_ENV, bwrap_path, dies_with_parent, system_view
from omnienv.sandboxes.desktop import DisplayError
from omnienv.sandboxes.polling import wait
from omnienv.sandboxes.procfs import children
from omnienv.sandboxes.xvfb.users import ServerUser, lease_user

__all__ = ["REQUIRED_PROGRAMS", "XServer", "missing_programs"]

REQUIRED_PROGRAMS = ("Xvfb", "bwrap")
XVFB_OPEN_FILES = 1024
"""Enough for Xvfb's most clients (256 by default), and not the limit of the process that
started it, raised for its sessions' files (:mod:`omnienv.core.open_files`)."""
XVFB_PROCESSES = 32
"""Xvfb and the keymap compilers it runs (``sh``, ``xkbcomp``); counted per user, and its user is its own."""
XVFB_TMP_BYTES = 16 * 1024 * 1024
"""Its private ``/tmp``: compiled keymaps, its lock file."""
XVFB_FLAGS = ("-nolisten", "tcp", "-extension", "MIT-SHM", "-extension", "GLX", "-noreset")
SOCKETS = "/tmp/.X11-unix"


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


def _server_command(
    argv: Sequence[str], socket_dir: Path, user: ServerUser | None, covers: Sequence[tuple[str, str]]
) -> list[str]:
    """bwrap running ``argv`` (Xvfb) as the module docs say; ``covers`` are ``(empty dir, path)``
    binds that hide paths of the system (omnienv's own installation)."""
    command = [
        bwrap_path(),
        # root makes the namespaces itself, then setpriv drops to the user; another user needs one of its own
        *(["--unshare-user", "--cap-drop", "ALL"] if user is None else []),
        "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session",
        *system_view(),
        "--dev", "/dev",
        "--perms", "1777", "--size", str(XVFB_TMP_BYTES), "--tmpfs", "/tmp",
        "--bind", str(socket_dir), SOCKETS,
    ]  # fmt: skip
    for empty, path in covers:
        command += ["--ro-bind", empty, path]
    command += ["--remount-ro", "/", "--chdir", "/", "--"]
    if user is not None:
        uid = str(user.uid)
        command += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        command += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    return [*command, *argv]


class XServer:
    """One Xvfb process in its sandbox; ``socket_dir`` is the only way in.

    ``process`` is bubblewrap, which lives exactly as long as Xvfb (its child, ``pid``) and exits
    with its status (``128 + signal`` for a killed one).
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        pid: int,
        number: int,
        log: Path,
        socket_dir: Path,
        user: ServerUser | None,
    ) -> None:
        self.process = process
        self.pid = pid
        self.number = number
        self.log = log
        self.socket_dir = socket_dir
        self.user = user
        self._pidfd = os.pidfd_open(pid)  # signals reach this Xvfb, never a process that reused its pid
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._lifeline = -1

    @property
    def name(self) -> str:
        return f":{self.number}"

    @property
    def killed(self) -> bool:
        """Whether the server died of SIGKILL (the out-of-memory killer's signal)."""
        return self.process.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)

    @classmethod
    def start(
        cls,
        width: int,
        height: int,
        depth: int,
        log: Path,
        deadline: float,
        memory_bytes: int,
        socket_dir: Path,
        covers: Sequence[tuple[str, str]] = (),
    ) -> XServer:
        """Start Xvfb (its address space capped at ``memory_bytes``: a client's huge pixmap gets BadAlloc)."""
        user = lease_user()
        socket_dir.mkdir(mode=0o755)
        if user is not None:
            os.chmod(socket_dir, 0o1777)  # root's, as Xvfb expects; only this server's sandbox writes it
        read_fd, write_fd = os.pipe()
        limits = [f"--as={memory_bytes}", f"--nofile={XVFB_OPEN_FILES}", f"--nproc={XVFB_PROCESSES}", "--core=0"]
        screen = f"{width}x{height}x{depth}"
        xvfb = ["prlimit", *limits, "--", "Xvfb", "-displayfd", str(write_fd), "-screen", "0", screen]
        try:
            with open(log, "wb") as out:
                process = subprocess.Popen(
                    dies_with_parent(_server_command([*xvfb, *XVFB_FLAGS], socket_dir, user, covers)),
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
                found = children(process.pid)
                if len(found) != 1:
                    raise DisplayError(f"the X server's sandbox runs {len(found)} processes, where Xvfb is its one")
                try:
                    return cls(process, found[0], number, log, socket_dir, user)
                except ProcessLookupError:
                    raise DisplayError(f"Xvfb exited as it started (code {process.poll()})") from None
            except BaseException:
                for pid in reversed(children(process.pid)):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                process.kill()
                process.wait()
                raise
        except BaseException:
            if user is not None:
                user.release()
            raise
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)

    @property
    def told_to_end(self) -> bool:
        """Whether the server ended itself cleanly, as it does when told to: by XKB's ``Terminate``
        action, which any client may bind to a key (``Terminate_Server``) and press through XTEST,
        or by a signal that only the host sends it, when it stops it."""
        return self.process.returncode == 0

    def alive(self) -> bool:
        return self.process.poll() is None

    def watch(self, root: Path, cgroups: Sequence[Path]) -> None:
        """Start the watchdog: on our death it kills the server and deletes ``root`` and ``cgroups``.

        It blocks reading a pipe whose only writer is this process; the kernel closes it on any
        death. It holds the server user's lease until it is done (that uid is free only once the
        server is gone). Its arguments are fixed paths of ours, never anything from the agent.
        """
        read_fd, self._lifeline = os.pipe()
        mounts = " ".join(shlex.quote(str(root / name)) for name in ("work", "run"))
        groups = " ".join(shlex.quote(str(path)) for path in cgroups)
        pids = f"{self.pid} {self.process.pid}"
        script = (
            f"read _; kill -TERM {pids}; sleep 1; kill -KILL {pids}; "
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
                pass_fds=() if self.user is None else (self.user.lock_fd,),
            )
        finally:
            os.close(read_fd)

    def stop(self) -> None:
        """Stop the watchdog, then the server, then give its user back."""
        if self._watchdog is not None:
            with contextlib.suppress(ProcessLookupError):
                self._watchdog.kill()
            self._watchdog.wait()
            self._watchdog = None
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.kill()
            self.process.wait()
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1
        if self.user is not None:
            self.user.release()

    def _signal(self, number: int) -> None:
        if self._pidfd >= 0:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, number)

    def tail(self, limit: int = 600) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
