"""A host user of its own for each X server, so that no X server can touch another process.

The X server must see the host's process ids (the X-Resource extension tells the desktop which
process owns a window: the client's pid as the kernel reports it), so it cannot have a pid
namespace of its own. What keeps a compromised X server from every other process is then its user:
a process may trace, signal or read ``/proc`` of another only with the same uid (or a capability).
Running it as root, or as one shared user such as ``nobody``, would let it trace the server that
started it or another session's X server. Each server gets a uid of its own instead, leased from
:data:`FIRST_UID` on with a lock file per uid: a lease is held while its lock's file is open, by
the owner and by the display's watchdog, so a uid is free again only once its X server is gone.

Only a root process can hand out uids (``setpriv`` needs ``CAP_SETUID``), only uids its user
namespace maps, and only where it may make the X server's namespaces itself (``CAP_SYS_ADMIN``).
Elsewhere (a server run as another user, a rootless container, a container that allows user
namespaces only) the X servers run as the server's own user, in a user namespace of their own,
and a warning says what that leaves open.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from omnienv.sandboxes.bubblewrap import LAUNCH_ENV, bwrap_path, system_view
from omnienv.sandboxes.desktop import DisplayError

__all__ = ["FIRST_UID", "UIDS", "ServerUser", "lease_user"]

logger = logging.getLogger("omnienv.desktop")

FIRST_UID = 2_000_000_000
"""Far above any account and the subordinate uids container runtimes hand out."""
UIDS = 4096
"""The most X servers one machine runs at once."""
LEASES = ".omnienv-x-users"
"""The leases' directory, in ``/run``: one place for every process of the machine whatever its
``TMPDIR`` (two places would hand one uid out twice), and writable by root alone (a directory
another user made first would stop every desktop). Not named ``omnienv-*``, in case it falls back
to the temporary directory: :func:`~omnienv.sandboxes.upkeep.sweep_stale` deletes those of dead
owners there, and this one has no owner."""


class ServerUser:
    """A leased uid; ``lock_fd`` holds the lease while it (or a copy given to a child) is open."""

    def __init__(self, uid: int, lock_fd: int) -> None:
        self.uid = uid
        self.lock_fd = lock_fd

    def __repr__(self) -> str:
        return f"ServerUser({self.uid})"

    def release(self) -> None:
        if self.lock_fd >= 0:
            os.close(self.lock_fd)
            self.lock_fd = -1


def lease_user() -> ServerUser | None:
    """A uid no other X server holds, or None where none can be handed out (see the module docs)."""
    if not _can_lease():
        return None
    directory = _leases_dir()
    for offset in range(UIDS):
        fd = os.open(directory / str(offset), os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return ServerUser(FIRST_UID + offset, fd)
    raise DisplayError(f"all {UIDS} X server users are taken: close some desktops first")


def _leases_dir() -> Path:
    directory = Path("/run" if os.path.isdir("/run") else tempfile.gettempdir()) / LEASES
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    found = os.lstat(directory)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o022:
        raise DisplayError(f"{directory} is not a private directory of this user: remove it and start again")
    return directory


@functools.cache
def _can_lease() -> bool:
    if os.geteuid() != 0:
        reason = "this process is not root"
    elif shutil.which("setpriv") is None:
        reason = "setpriv (util-linux) is not installed"
    elif not _mapped(FIRST_UID, UIDS):
        reason = f"uids {FIRST_UID}-{FIRST_UID + UIDS - 1} are not mapped in this user namespace"
    elif not _root_sandbox_runs():
        reason = "bubblewrap cannot make namespaces here without a user namespace (no CAP_SYS_ADMIN)"
    else:
        return True
    logger.warning(
        "the desktops' X servers run as this process's own user (%s): a program that took over one could "
        "trace this process; run the server as root on the host (or map those uids) to give each a user of its own",
        reason,
    )
    return False


def _root_sandbox_runs() -> bool:
    """Whether root may make the X server's namespaces itself and drop to a leased uid there (a
    container without ``CAP_SYS_ADMIN`` allows only user namespaces, as the sessions' sandboxes use)."""
    uid = str(FIRST_UID)
    probe = [bwrap_path(), "--unshare-ipc", "--unshare-uts", *system_view(), "--"]
    probe += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", "true"]
    try:
        return subprocess.run(probe, env=dict(LAUNCH_ENV), capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _mapped(first: int, count: int) -> bool:
    """Whether this user namespace maps every uid of ``first`` to ``first + count`` (a rootless
    container maps only some)."""
    try:
        ranges = [tuple(map(int, line.split())) for line in Path("/proc/self/uid_map").read_text().splitlines()]
    except (OSError, ValueError):
        return True
    return any(inside <= first and first + count <= inside + length for inside, _, length in ranges)
