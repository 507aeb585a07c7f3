"""The bubblewrap (``bwrap``) command line for running one untrusted program.

The sandbox sees a read-only system (``/usr``, the Python installation, a few files of
``/etc``), a private ``/tmp`` in memory, one writable work directory, no network (its own empty
network namespace) and none of the host's environment variables. Resource limits are applied by
``prlimit`` *inside* the sandbox's own user namespace, so the process-count limit counts only
that sandbox's processes and one session's fork bomb cannot starve another's.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import stat
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from omnienv.core import EnvironmentFailure

__all__ = [
    "HOME",
    "LAUNCH_ENV",
    "SYSTEM_PATHS",
    "Limits",
    "SandboxUnavailableError",
    "bwrap_command",
    "bwrap_path",
    "dies_with_parent",
    "gate_taken",
    "options_file",
    "python_paths",
    "system_view",
]

HOME = "/home/user"
"""The work directory as the sandboxed program sees it (also its ``$HOME`` and cwd)."""

LAUNCH_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
"""The whole environment bwrap itself runs with. ``--clearenv`` empties only the sandboxed
program's environment; bwrap's own (the sandbox's pid 1, readable in ``/proc/1/environ``) is
what it was started with, so it must never be the server's."""

_ETC = (
    "alternatives", "fonts", "hosts", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
    "localtime", "mime.types", "nsswitch.conf", "ssl/certs", "ssl/openssl.cnf",
)  # fmt: skip
"""The files of ``/etc`` a sandbox sees. Of ``/etc/ssl`` only the public certificates and OpenSSL's
settings: its user is the server's, so ``/etc/ssl/private`` (the machine's TLS keys, root's alone)
would be the agent's to read under a server run as root."""
_TOP_LEVEL = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
SYSTEM_PATHS = ("/usr", *(f"/{name}" for name in _TOP_LEVEL), "/etc", "/proc", "/dev")
"""Where a sandbox sees the host's system: a writable directory mounted there would hide it."""


class SandboxUnavailableError(EnvironmentFailure):
    """The machine cannot run the sandbox (bubblewrap missing or refused)."""

    code = "SANDBOX_UNAVAILABLE"


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits: per process (``prlimit``) and per sandbox (cgroups, tmpfs sizes).

    ``memory_bytes`` caps each process's address space (RLIMIT_AS), so a runaway allocation fails
    inside the program (Python raises MemoryError) instead of drawing an OOM kill.
    ``processes`` counts threads too (RLIMIT_NPROC), and a kernel runs about ten of its own.
    ``total_memory_bytes``, ``total_processes`` and ``cpus`` bound the whole sandbox (every
    process, and what it keeps in its in-memory ``/tmp``, ``/dev/shm`` and work dir) through its
    cgroup where the machine allows one (:mod:`omnienv.sandboxes.cgroups`). ``tmp_bytes``,
    ``shm_bytes`` and ``work_bytes`` size ``/tmp``, ``/dev/shm`` and the work directory;
    ``run_bytes`` sizes the sandbox's run directory (sockets and files it shares with the host).
    ``work_files`` and ``run_files`` cap how many files, directories and links (inodes) those two
    hold: bytes alone let an empty file cost nothing, so millions of them would fit, each one kept
    in the host's memory and walked by whatever the host reads from the sandbox (the terminal's
    copy for its verifier). 200,000 holds a large ``node_modules`` or a cloned kernel tree (about
    90,000 files) with room to spare, and costs at most about 160 MB of memory (an inode and its
    name, charged to the sandbox) and 10 s of the host's copy. The run dir holds sockets,
    connection files and the desktop's apps' own homes: 16,384 is many browser profiles.
    """

    memory_bytes: int = 2 * 1024**3
    cpu_seconds: int = 900
    processes: int = 96
    open_files: int = 1024
    file_bytes: int = 512 * 1024**2
    tmp_bytes: int = 128 * 1024**2
    shm_bytes: int = 64 * 1024**2
    work_bytes: int = 512 * 1024**2
    total_memory_bytes: int = 3 * 1024**3
    total_processes: int = 256
    cpus: float = 1.0
    run_bytes: int = 32 * 1024**2
    work_files: int = 200_000
    run_files: int = 16_384

    def prlimit_args(self) -> list[str]:
        return [
            "prlimit",
            f"--as={self.memory_bytes}",
            f"--cpu={self.cpu_seconds}",
            f"--nproc={self.processes}",
            f"--nofile={self.open_files}",
            f"--fsize={self.file_bytes}",
            "--core=0",
            "--",
        ]


def bwrap_path() -> str:
    """The ``bwrap`` executable, or a typed error that names the fix."""
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailableError(
            "bubblewrap is not installed: run 'make system-deps' or 'apt-get install bubblewrap'"
        )
    return found


def python_paths() -> list[str]:
    """The interpreter's installation and its virtualenv, to mount read-only at their own paths.

    The virtualenv holds omnienv itself (and so, for an environment, its tasks and answers): never
    mount it for an agent's code. Jupyter kernels get a Python of their own instead
    (:func:`omnienv.sandboxes.jupyter.packages.kernel_view`).
    """
    paths = {sys.prefix, sys.base_prefix, str(Path(sys.executable).resolve().parent.parent)}
    return sorted(p for p in paths if p and not p.startswith("/usr/") and os.path.isdir(p))


def bwrap_command(
    argv: Sequence[str],
    *,
    work_dir: str,
    shared_dirs: Sequence[str] = (),
    read_only: Sequence[str] = (),
    files: Sequence[tuple[str, str]] = (),
    env: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    hostname: str = "sandbox",
    block_fd: int | None = None,
    binds: Sequence[tuple[str, str]] = (),
    links: Sequence[tuple[str, str]] = (),
    options_fd: int | None = None,
    nest: bool = False,
) -> list[str]:
    """The full command line that runs ``argv`` in a fresh sandbox.

    ``work_dir`` (a host directory) is mounted writable at :data:`HOME`. Each of ``shared_dirs``
    is mounted writable at its own host path, so that Unix sockets made inside are reachable from
    the host under the same name; each ``(host_path, inside)`` of ``binds`` is mounted writable at
    ``inside`` (sockets made there are reachable at ``host_path``, and the sandbox never learns the
    host's path); each ``(target, path)`` of ``links`` is a symbolic link at ``path`` in the read-only
    root. ``read_only`` paths are mounted at their own path, ``files`` (files or
    directories) read-only at their ``inside`` path, in that order, after the system. With
    ``block_fd``, bwrap waits to start ``argv`` until a byte can be read from it (so that the
    caller can move the sandbox into its cgroup first). With ``options_fd`` (a new memory file, see
    :func:`options_file`), bwrap's options are written there and read by bwrap (``--args``), not
    put on its command line: inside the sandbox, ``/proc/1/cmdline`` is that command line, and the
    options name the host path of every mount. Unless ``nest``, the program cannot make user
    namespaces of its own (where bwrap can forbid them, 0.8 on): in one, the sandbox's uid (the
    host's root when the server is) mounts the host's cgroup hierarchy as it finds it, makes
    cgroups there and kills every process of one (``cgroup.kill``).
    """
    limits = limits or Limits()
    cmd = [
        bwrap_path(),
        *(["--block-fd", str(block_fd)] if block_fd is not None else []),
        "--unshare-all",  # network, pid, ipc, uts, cgroup and user namespaces
        "--unshare-user", "--uid", "1000", "--gid", "1000",
        *([] if nest or not _can_disable_userns() else ["--disable-userns"]),
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
        "--hostname", hostname,
        "--clearenv",
        *system_view(),
    ]  # fmt: skip
    # The private /tmp comes before the binds: a virtualenv or socket directory that lives under
    # the host's /tmp (a CI checkout, say) is then mounted on top of it instead of hidden by it.
    # /proc/sys read-only: the kernel lets a process whose uid is the host's root write the host's
    # sysctls (core_pattern runs a program as root on the host) with no capability at all, and the
    # sandbox's uid is the host's when the server runs as root. bwrap leaves it writable.
    cmd += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
    if nest:  # a nested bwrap forbids user namespaces by writing its own namespace's limit there
        cmd += ["--bind", "/proc/sys/user", "/proc/sys/user"]  # (each user namespace has its own)
    for path in _root_only_proc():  # the same uid reads what the host shows only to root: cover it
        cmd += ["--ro-bind", "/dev/null", path]
    cmd += ["--dev", "/dev", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm"]
    cmd += ["--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    for path in read_only:
        cmd += ["--ro-bind", path, path]
    for host_path, inside in files:
        cmd += ["--ro-bind", host_path, inside]
    cmd += ["--bind", work_dir, HOME]
    for path in shared_dirs:
        cmd += ["--bind", path, path]
    for host_path, inside in binds:
        cmd += ["--bind", host_path, inside]
    for target, path in links:
        cmd += ["--symlink", target, path]
    cmd += ["--remount-ro", "/", "--chdir", HOME]  # the root holds only mount points: make it read-only
    for key, value in (env or {}).items():
        cmd += ["--setenv", key, value]
    program = ["--", *limits.prlimit_args(), *_default_signals(), *argv]
    if options_fd is None:
        return [*cmd, *program]
    os.write(options_fd, b"".join(option.encode() + b"\0" for option in cmd[1:]))
    os.lseek(options_fd, 0, os.SEEK_SET)
    return [cmd[0], "--args", str(options_fd), *program]


def system_view() -> list[str]:
    """bwrap options that show the host's system read-only: ``/usr``, the top-level directories
    (or their links into ``/usr``) and a few files of ``/etc``, nothing else of the host."""
    options = ["--ro-bind", "/usr", "/usr"]
    for name in _TOP_LEVEL:
        host = Path("/") / name
        if host.is_symlink():
            options += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            options += ["--ro-bind", str(host), str(host)]
    for name in _ETC:
        if os.path.exists(f"/etc/{name}"):
            options += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return options


@functools.cache
def _can_disable_userns() -> bool:
    return _runs([bwrap_path(), "--unshare-user", "--disable-userns", "--ro-bind", "/", "/", "true"])


@functools.cache
def _root_only_proc() -> tuple[str, ...]:
    """The files of the host's ``/proc`` that only root may read: the kernel's slab and page tables,
    its timers and memory map (what a kernel exploit looks for). Each is covered by ``/dev/null``,
    which the sandbox may not open (``/proc`` is mounted ``nodev``)."""
    found = []
    with contextlib.suppress(OSError), os.scandir("/proc") as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if not entry.name.isdigit() and entry.is_file(follow_symlinks=False):
                    if not entry.stat(follow_symlinks=False).st_mode & stat.S_IROTH:
                        found.append(entry.path)
    return tuple(sorted(found))


def options_file() -> int:
    """A memory file for :func:`bwrap_command`'s ``options_fd``, for the caller to pass to bwrap's
    process and close (bwrap closes its own copy once read)."""
    return os.memfd_create("bwrap-options", os.MFD_CLOEXEC)


_CHECK_PARENT = 'test "$PPID" = "$0" && exec "$@"'


def dies_with_parent(command: Sequence[str], parent: int | None = None) -> list[str]:
    """``command``, killed when the process that starts it dies, from before its first instruction.

    bubblewrap's own ``--die-with-parent`` is armed only once bwrap runs: an owner killed in the
    milliseconds between its fork and that left an orphan bwrap (outside the sandbox's cgroup too,
    where the owner had not yet moved it). ``setpriv --pdeathsig`` arms the signal first, and a
    shell then checks that the parent is still ``parent`` (this process): one that died in between
    cannot signal any more. Without setpriv (util-linux 2.33 on), ``command`` as it is.
    """
    if not _has_setpriv():
        return list(command)
    owner = str(os.getpid() if parent is None else parent)
    return ["setpriv", "--pdeathsig", "KILL", "--", "/bin/sh", "-c", _CHECK_PARENT, owner, *command]


@functools.cache
def _has_setpriv() -> bool:
    return _runs(["setpriv", "--pdeathsig", "KILL", "--", "true"])


def _runs(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, env=LAUNCH_ENV, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def _default_signals() -> list[str]:
    """``env --default-signal``, where coreutils has it (8.31 on): the program starts with every
    signal at its default. An ignored signal is inherited through fork and exec, and a server
    started in the background of a script (``&``) or under ``nohup`` ignores SIGINT or SIGHUP:
    without this, a command in a sandbox shell would shrug off the shell's Ctrl-C."""
    argv = ["env", "--default-signal"]
    return argv if _runs([*argv, "true"]) else []


_SETUP_S = 30.0  # for bwrap to make its mounts and read the gate, on a busy machine


def gate_taken(gate_write: int, process: subprocess.Popen[bytes]) -> bool:
    """Whether bwrap, started with ``block_fd`` the read end of the ``gate_write`` pipe and sent its
    byte, read it: then its mounts succeeded and the program starts. The write alone does not
    tell: bwrap's outer process holds the gate open while its child fails a mount."""
    deadline = time.monotonic() + _SETUP_S
    pause = 0.0005
    while _unread(gate_write):
        if process.poll() is not None:
            return not _unread(gate_write)
        if time.monotonic() >= deadline:
            return True  # slow rather than failed: the caller's own readiness wait decides
        time.sleep(pause)
        pause = min(2 * pause, 0.01)
    return True


def _unread(pipe_fd: int) -> int:
    return int(struct.unpack("i", fcntl.ioctl(pipe_fd, termios.FIONREAD, b"\0\0\0\0"))[0])
