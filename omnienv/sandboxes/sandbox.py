"""One session's sandbox: the single way omnienv starts a process on a session's behalf.

Kernels, X clients, the window manager, input tools and shells all start through
:meth:`Sandbox.spawn`, so every one of them gets the same guarantees:

- **bubblewrap** (:mod:`omnienv.sandboxes.bubblewrap`): no network, read-only system, a private
  pid namespace (everything it forks dies with it), private sized ``/tmp`` and ``/dev/shm``, and an
  explicit environment: bwrap itself starts with :data:`~omnienv.sandboxes.bubblewrap.LAUNCH_ENV`,
  never the server's, so ``/proc/1/environ`` holds no secret.
- **one cgroup** per sandbox (:mod:`omnienv.sandboxes.cgroups`), joined before the program runs
  (bwrap waits on ``--block-fd`` until the host has moved it), for total memory, processes and CPU.
- **a size-capped work dir**: a tmpfs of ``Limits.work_bytes`` and ``Limits.work_files`` files
  mounted on the host side where the machine allows mounts; it is also charged to the sandbox's
  memory. It holds the home (``work_dir``) and, beside it, ``private_dir``, which no process
  inside can touch: every bind of a host directory comes from there or from outside the sandbox,
  never from inside the home. The run dir (``run_dir``, for sockets and files shared with the
  host) gets a tmpfs of ``Limits.run_bytes`` and ``Limits.run_files`` the same way.
- **nothing left behind**: :meth:`Sandbox.close` kills the cgroup, the process groups and the
  process trees, unmounts the work dir and deletes every file. A sandbox whose owner died (its
  ``owner.lock`` is free) is swept by the next :func:`~omnienv.sandboxes.upkeep.sweep_stale`.

The host exchanges data with the sandbox only through pipes, sockets it owns, or files opened in
the work dir without following symlinks (:meth:`Sandbox.read_work_file`).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import stat
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from omnienv.core.open_files import make_room_for_files
from omnienv.sandboxes.bubblewrap import (
    HOME,
    LAUNCH_ENV,
    SYSTEM_PATHS,
    Limits,
    SandboxUnavailableError,
    bwrap_command,
    dies_with_parent,
    gate_taken,
    options_file,
)
from omnienv.sandboxes.cgroups import Cgroup, probe
from omnienv.sandboxes.procfs import process_tree
from omnienv.sandboxes.tmpfs import mount_tmpfs, remove_tree

__all__ = ["Sandbox"]

logger = logging.getLogger("omnienv.sandbox")

HOME_MODE = 0o755
"""The home's mode, given back at every spawn."""
OWNER_LOCK = "owner.lock"
"""Locked by a sandbox's owner while it lives: a sandbox whose lock is free is swept
(:func:`~omnienv.sandboxes.upkeep.sweep_stale`)."""


class Sandbox:
    """Isolation for one session; see the module docs. Thread-safe; ``close`` is idempotent."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        base_dir: str | None = None,
        prefix: str = "omnienv-sandbox-",
        hidden: Sequence[str | Path] = (),
    ) -> None:
        self.limits = limits or Limits()
        self.hidden = _in_view(PACKAGE, *hidden)
        """Host directories the sandbox's read-only system would show, covered by an empty one in
        every process: omnienv's own installation (every shipped task's tests and solutions, when it
        is installed into the system's Python under ``/usr``), and what the caller names."""
        make_room_for_files()  # every sandbox holds a few files here; a process may drive hundreds
        self.root = Path(tempfile.mkdtemp(prefix=prefix, dir=base_dir))
        # Held while this process owns the sandbox; a free lock marks the files of a dead owner. It
        # is locked before it gets its name: a sweeper (another process's pool starting) that found
        # it unlocked in between would delete this sandbox as it is being made. It is the first
        # thing made, so a root without one is a few microseconds old or its owner died making it.
        unnamed = self.root / f".{OWNER_LOCK}.new"
        self._owner_lock = os.open(unnamed, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._owner_lock, fcntl.LOCK_EX)
        os.rename(unnamed, self.root / OWNER_LOCK)
        self.run_dir = self.root / "run"
        storage = self.root / "work"
        self.work_dir = storage / "home"
        """Mounted writable at the sandbox's home: everything in it is the agent's to rename or replace."""
        self.private_dir = storage / "private"
        """Beside the home, on the same capped storage, but never mounted as a whole: no process inside
        can rename or replace what is here, so a directory the host binds from here is the one it
        meant. A bind from inside the home could be swapped for a link to any host path before the
        next spawn (bwrap follows links in a bind's source)."""
        self.run_dir.mkdir()
        storage.mkdir()
        try:
            self.work_capped = mount_tmpfs(storage, self.limits.work_bytes, self.limits.work_files)
            self.work_dir.mkdir()
            self.private_dir.mkdir(mode=0o700)
            # The run dir is shared writable with the sandbox (sockets, files it hands the host): it
            # gets its own small tmpfs, or the sandbox could fill the host's disk through it.
            self.run_capped = mount_tmpfs(self.run_dir, self.limits.run_bytes, self.limits.run_files)
            limits = self.limits
            self.cgroup = Cgroup.create(
                memory_bytes=limits.total_memory_bytes,
                processes=limits.total_processes,
                cpus=limits.cpus,
                name=self.root.name,
            )
        except BaseException:  # leave nothing of a half-made sandbox: mounts, cgroup dirs, files
            with contextlib.suppress(Exception):
                if probe().parents:
                    Cgroup(probe(), self.root.name).remove()
            remove_tree(self.root)
            os.close(self._owner_lock)
            raise
        self.processes: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"Sandbox({str(self.root)!r}, processes={len(self.processes)}, {self.cgroup!r})"

    @property
    def closed(self) -> bool:
        return self._closed

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        shared_dirs: Sequence[str] = (),
        read_only: Sequence[str] = (),
        files: Sequence[tuple[str, str]] = (),
        stdin: int | IO[Any] | None = subprocess.DEVNULL,
        stdout: int | IO[Any] | None = subprocess.DEVNULL,
        stderr: int | IO[Any] | None = subprocess.DEVNULL,
        pass_fds: Sequence[int] = (),
        hostname: str = "sandbox",
        binds: Sequence[tuple[str, str]] = (),
        links: Sequence[tuple[str, str]] = (),
        nest: bool = False,
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` inside the sandbox, in its cgroup from its first instruction.

        ``env`` is the program's whole environment (nothing of the host's is added); ``argv`` is
        passed to bwrap as separate words and never through a shell. ``shared_dirs``,
        ``read_only``, ``files`` and ``binds`` are mounts, ``links`` symbolic links, and ``nest`` lets the program make
        sandboxes of its own (user namespaces), as :func:`~omnienv.sandboxes.bubblewrap.
        bwrap_command` describes them.
        """
        if self._closed:
            raise RuntimeError("the sandbox is closed")
        for host_path, _ in binds:
            self._check_bind_source(host_path)
        # bwrap starts the program in the home: one its last program made unreadable (chmod 000 ~, then
        # exit) would fail every later start, which reads as the host's failure, not the sandbox's doing.
        for home in (str(self.work_dir), *(host for host, target in binds if os.path.normpath(target) == HOME)):
            os.chmod(home, HOME_MODE)
        gate_read, gate_write = os.pipe()
        options = options_file()
        try:
            command = bwrap_command(
                argv,
                work_dir=str(self.work_dir),
                shared_dirs=shared_dirs,
                read_only=read_only,
                files=[*self.covers(), *files],
                env=env,
                limits=self.limits,
                hostname=hostname,
                block_fd=gate_read,
                binds=binds,
                links=links,
                options_fd=options,
                nest=nest,
            )
            process = subprocess.Popen(
                dies_with_parent(command),
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                env=dict(LAUNCH_ENV),
                cwd="/",  # the launcher's shell exports its working directory (PWD), a host path, to bwrap
                start_new_session=True,
                close_fds=True,
                pass_fds=(gate_read, options, *pass_fds),
            )
        except BaseException:
            os.close(gate_write)
            raise
        finally:
            os.close(gate_read)
            os.close(options)
        with self._lock:
            self.processes.append(process)
        try:
            self._join_cgroup(process.pid)
        except OSError as exc:
            self._kill_process(process)
            os.close(gate_write)
            raise RuntimeError(f"cannot move the sandbox into its cgroup: {exc}") from exc
        try:
            os.write(gate_write, b"1")  # bwrap may start the program now
            started = gate_taken(gate_write, process)
        except BrokenPipeError:  # bwrap died before it read the gate: it never started the program
            started = False
        finally:
            os.close(gate_write)
        if not started:
            self._kill_process(process)
            raise SandboxUnavailableError(
                f"bubblewrap exited (status {process.returncode}) before it started {argv[0]!r}; "
                "its own message, if any, went to the program's stderr"
            )
        return process

    def covers(self) -> list[tuple[str, str]]:
        """``(empty directory, hidden path)`` read-only binds that cover each of :attr:`hidden`."""
        empty = self.root / "empty"
        if self.hidden:
            empty.mkdir(mode=0o555, exist_ok=True)
        return [(str(empty), path) for path in self.hidden]

    def _check_bind_source(self, host_path: str) -> None:
        """Refuse a bind the sandbox itself could redirect: a link, or a path inside its home."""
        path, home = Path(os.path.abspath(host_path)), self.work_dir
        if path.is_symlink():
            raise ValueError(f"cannot bind {host_path}: it is a symbolic link")
        if path.is_relative_to(home) or path.resolve().is_relative_to(home.resolve()):
            raise ValueError(f"cannot bind {host_path}: it is inside the sandbox's home; bind from private_dir")

    def _join_cgroup(self, pid: int) -> None:
        if not self.cgroup.dirs:
            return
        # bwrap has forked at most its namespace child, which waits on the gate: moving the
        # parent, then whatever it had already forked, leaves nothing outside.
        self.cgroup.add(pid)
        for child in process_tree(pid)[1:]:
            with contextlib.suppress(ProcessLookupError):
                self.cgroup.add(child)

    def pids(self) -> set[int]:
        """Every live process of the sandbox that the host can see."""
        found = set(self.cgroup.pids())
        with self._lock:
            processes = list(self.processes)
        for process in processes:
            if process.poll() is None:
                found.update(process_tree(process.pid))
        return found

    def memory_limit_hits(self) -> int:
        """How often the sandbox's processes together hit the memory limit (OOM kills)."""
        return self.cgroup.memory_events()

    def _kill_process(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            for pid in process_tree(process.pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)

    def kill(self) -> None:
        """Kill every process of the sandbox and reap them; the files stay. Returns once the cgroup
        is empty (at most 10 s): its kill signals every process but waits for none."""
        self.cgroup.kill()
        with self._lock:
            processes = list(self.processes)
        for process in processes:
            self._kill_process(process)
        self.cgroup.wait_empty()

    def read_work_file(self, path: str, limit: int) -> bytes | None:
        """Up to ``limit`` bytes of a regular file in the work dir, never following a symlink."""
        fd = self._open_in_work(path, os.O_RDONLY)
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as f:
            return f.read(limit)

    def write_work_file(self, path: str, data: bytes) -> None:
        """Write a file in the work dir (parents made), never following a symlink the agent planted."""
        parts = _relative_parts(path)
        dir_fd = os.open(self.work_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for part in parts[:-1]:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=dir_fd)
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
                os.close(dir_fd)
                dir_fd = next_fd
            fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def _open_in_work(self, path: str, flags: int) -> int | None:
        try:
            parts = _relative_parts(path)
        except ValueError:
            return None
        dir_fd = os.open(self.work_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for part in parts[:-1]:
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
                os.close(dir_fd)
                dir_fd = next_fd
            fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        except OSError:
            return None
        finally:
            os.close(dir_fd)
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device would block or lie
            os.close(fd)
            return None
        return fd

    def close(self) -> None:
        """Kill everything, unmount, delete the files and the cgroup. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.kill()
        self.cgroup.remove()
        remove_tree(self.root)
        os.close(self._owner_lock)


PACKAGE = Path(__file__).resolve().parents[1]
"""omnienv's own package directory."""


def _in_view(*paths: str | Path) -> tuple[str, ...]:
    """Those of ``paths`` that a sandbox's read-only system mounts show (they lie under one), less
    those inside another: the empty directory over that one hides them already."""

    def under(path: str, roots: Sequence[str]) -> bool:
        return any(path == root or path.startswith(root + "/") for root in roots)

    shown = sorted({os.path.realpath(path) for path in paths if under(os.path.realpath(path), SYSTEM_PATHS)})
    kept: list[str] = []
    for path in shown:  # sorted: an ancestor comes before what lies in it
        if not under(path, kept):
            kept.append(path)
    return tuple(kept)


def _relative_parts(path: str) -> list[str]:
    """The components of a path inside the work dir (``/home/user/...`` accepted); refuses escapes."""
    text = path[len(HOME) :].lstrip("/") if path == HOME or path.startswith(HOME + "/") else path
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or text.startswith("/"):
        raise ValueError(f"'{path}' is not a file inside the work directory; use a relative path")
    return parts
