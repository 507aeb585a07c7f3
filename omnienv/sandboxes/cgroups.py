"""Per-sandbox resource limits through Linux control groups: total memory, processes and CPU.

``prlimit`` caps each process alone, so five processes of 1.5 GB fit under a 2 GB "limit"; a
cgroup caps the sandbox as a whole, and it also counts what the sandbox writes to its in-memory
``/tmp`` and ``/dev/shm``. Both hierarchies are supported:

- **cgroup v2** (a delegated subtree of the unified hierarchy): ``memory.max``, ``pids.max``,
  ``cpu.max``, and ``cgroup.kill`` to end everything in one write.
- **cgroup v1** (one hierarchy per controller, as on many container hosts): ``memory``, ``pids``
  and ``cpu`` directories of the same name, and a ``SIGKILL`` for every pid listed.

:func:`probe` finds, once per process, which of them this machine lets us write; where none can
be written, :func:`probe` says so loudly (once) and sandboxes run with per-process limits only.
A process joins its cgroup before the sandboxed program starts (see
:meth:`omnienv.sandboxes.sandbox.Sandbox.spawn`), so nothing it forks is ever outside it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cgroup", "CgroupSupport", "probe"]

logger = logging.getLogger("omnienv.sandbox")

_V1_ROOT = Path("/sys/fs/cgroup")
_PARENT = "omnienv"
_CPU_PERIOD_US = 100_000


@dataclass(frozen=True, slots=True)
class CgroupSupport:
    """Where sandbox cgroups are made, by controller (empty when none can be)."""

    version: int  # 2, 1, or 0 for none
    parents: dict[str, Path]  # controller name -> the directory that holds our cgroups
    reason: str = ""

    @property
    def enforced(self) -> tuple[str, ...]:
        return tuple(sorted(self.parents))


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(exist_ok=True)
        probe_dir = path / f"probe-{uuid.uuid4().hex[:8]}"
        probe_dir.mkdir()
        probe_dir.rmdir()
        return True
    except OSError:
        return False


def _unified_mount() -> Path | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2":
                return Path(fields[1])
    return None


def _probe_v2() -> CgroupSupport | None:
    mount = _unified_mount()
    if mount is None:
        return None
    own = "/"
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                own = line[3:]
    base = mount / own.lstrip("/")
    try:
        available = set((base / "cgroup.controllers").read_text().split())
    except OSError:
        return None
    wanted = {"memory", "pids", "cpu"} & available
    if not wanted:
        return None
    parent = base / _PARENT
    if not _writable_dir(parent):
        return None
    # Controllers must be enabled for children at every level between us and our cgroups.
    for level in (base, parent):
        with contextlib.suppress(OSError):
            (level / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(wanted)))
    enabled = set((parent / "cgroup.subtree_control").read_text().split()) if parent.exists() else set()
    if not enabled:
        return None
    return CgroupSupport(2, {c: parent for c in enabled & wanted})


def _probe_v1() -> CgroupSupport | None:
    parents: dict[str, Path] = {}
    for controller in ("memory", "pids", "cpu"):
        parent = _V1_ROOT / controller / _PARENT
        if (_V1_ROOT / controller / "cgroup.procs").exists() and _writable_dir(parent):
            parents[controller] = parent
    return CgroupSupport(1, parents) if parents else None


@functools.cache
def probe() -> CgroupSupport:
    """What this machine lets sandboxes use; logged once, loudly, when something is missing."""
    if os.environ.get("OMNIENV_SANDBOX_CGROUPS", "1") == "0":
        support: CgroupSupport | None = CgroupSupport(0, {}, "disabled by OMNIENV_SANDBOX_CGROUPS=0")
    else:
        support = _probe_v2() or _probe_v1()
    if support is None:
        support = CgroupSupport(0, {}, "no writable cgroup hierarchy (run as root, or delegate a cgroup v2 subtree)")
    missing = {"memory", "pids", "cpu"} - set(support.parents)
    if missing:
        logger.warning(
            "sandbox limits NOT enforced per sandbox for %s: %s; each process is still limited on its own "
            "(prlimit), but processes of one sandbox together can exceed them. See docs/security.md.",
            ", ".join(sorted(missing)),
            support.reason or f"cgroup v{support.version} lacks those controllers",
        )
    return support


class Cgroup:
    """One sandbox's cgroup (a directory per controller on v1, one directory on v2)."""

    def __init__(self, support: CgroupSupport, name: str) -> None:
        self.support = support
        self.name = name
        self.dirs = sorted({parent / name for parent in support.parents.values()})
        for path in self.dirs:
            path.mkdir(exist_ok=True)
        # Read after every cell of a kernel: kept as plain strings for os.open (see _read).
        members = support.parents.get("pids", self.dirs[0].parent if self.dirs else None)
        self._procs_file = str(members / name / "cgroup.procs") if members is not None else None
        memory = support.parents.get("memory")
        events = "memory.events" if support.version == 2 else "memory.oom_control"
        self._events_file = str(memory / name / events) if memory is not None else None

    @classmethod
    def create(cls, *, memory_bytes: int, processes: int, cpus: float, name: str | None = None) -> Cgroup:
        cgroup = cls(probe(), name or f"sandbox-{uuid.uuid4().hex[:12]}")
        cgroup.set_limits(memory_bytes=memory_bytes, processes=processes, cpus=cpus)
        return cgroup

    def __repr__(self) -> str:
        return f"Cgroup({self.name!r}, v{self.support.version}, {', '.join(self.support.enforced) or 'no limits'})"

    def _write(self, controller: str, v1_file: str, v2_file: str, value: str) -> None:
        parent = self.support.parents.get(controller)
        if parent is None:
            return
        target = parent / self.name / (v2_file if self.support.version == 2 else v1_file)
        with contextlib.suppress(OSError):  # memsw files only exist with swap accounting
            target.write_text(value)

    def set_limits(self, *, memory_bytes: int, processes: int, cpus: float) -> None:
        self._write("memory", "memory.limit_in_bytes", "memory.max", str(memory_bytes))
        self._write(
            "memory",
            "memory.memsw.limit_in_bytes",
            "memory.swap.max",
            str(memory_bytes) if self.support.version == 1 else "0",
        )
        self._write("pids", "pids.max", "pids.max", str(processes))
        quota = max(1000, int(cpus * _CPU_PERIOD_US))
        self._write(
            "cpu",
            "cpu.cfs_quota_us",
            "cpu.max",
            str(quota) if self.support.version == 1 else f"{quota} {_CPU_PERIOD_US}",
        )

    def add(self, pid: int) -> None:
        """Move ``pid`` into every controller's cgroup."""
        for path in self.dirs:
            (path / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        """The processes in the cgroup. One controller's directory is enough: a process joins
        every one of them before the sandboxed program starts (:meth:`Sandbox.spawn
        <omnienv.sandboxes.sandbox.Sandbox.spawn>` kills it otherwise), what it forks inherits all
        of them, and nothing in the sandbox can move a process. A Jupyter sandbox reads it after
        every cell, and with the memory events that took 0.2 ms a cell over three directories
        through pathlib; it takes 45 µs now."""
        if self._procs_file is None:
            return set()
        with contextlib.suppress(OSError):
            return {int(p) for p in _read(self._procs_file).split()}
        return set()

    def memory_events(self) -> int:
        """How many times the sandbox hit its memory limit (the OOM killer ran or an allocation failed)."""
        if self._events_file is None:
            return 0
        with contextlib.suppress(OSError, ValueError):
            for line in _read(self._events_file).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        return 0

    def kill(self) -> None:
        """SIGKILL everything in the cgroup, forks that race the kill included."""
        if self.support.version == 2 and self.dirs:
            with contextlib.suppress(OSError):
                (self.dirs[0] / "cgroup.kill").write_text("1")
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def wait_empty(self, timeout: float = 10.0) -> bool:
        """Kill again until no process is left; False past ``timeout``. A killed process stays in
        the cgroup until it has exited and been reaped, which takes a fork bomb's thousands a while
        on a busy machine (sleeping here, so that they get the CPU to exit)."""
        deadline = time.monotonic() + timeout
        while self.pids():
            if time.monotonic() > deadline:
                return False
            self.kill()
            time.sleep(0.001)
        return True

    def remove(self, timeout: float = 10.0) -> bool:
        """Kill what is left and delete the cgroup; True when every directory is gone."""
        self.kill()
        removed = True
        # A killed process leaves the cgroup only once it has exited and been reaped, which takes a
        # while for one that held gigabytes: wait for it (sleeping, so that it gets the CPU to exit).
        deadline = time.monotonic() + timeout
        for path in self.dirs:
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        removed = False
                        logger.warning("could not remove the cgroup %s: it still holds processes", path)
                        break
                    self.kill()
                    time.sleep(0.001)
        return removed


def _read(path: str) -> str:
    """A cgroupfs file's text, read with bare system calls: ``Path.read_text`` builds a text
    wrapper and costs about three times as much, and these files are read after every cell."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode()
