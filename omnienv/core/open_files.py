"""Room for many sessions' open files in one process.

A session holds files in the process that drives it: a WebSocket connection one, a sandboxed
shell three, a desktop about six, a Jupyter kernel about a dozen. Many systems start a program
with a soft limit of 1024 open files under a far higher hard one, so a server, an eval or a
trainer holding a few hundred sessions would fail with EMFILE ("Too many open files") long
before the machine runs short of anything. So the parts that hold sessions (the server, every
client, every sandbox) call :func:`make_room_for_files` first, as a program that never waits
with ``select`` may (omnienv's waits use ``poll``: :mod:`omnienv.sandboxes.polling`). The
programs a sandbox runs keep a limit of their own (``prlimit --nofile``).
"""

from __future__ import annotations

import contextlib
import sys

if sys.platform != "win32":  # Windows has no such limit; the client and the contract run there too
    import resource

__all__ = ["UNLIMITED_ROOM", "make_room_for_files"]


UNLIMITED_ROOM = 65536
"""The soft limit to ask for under an unlimited hard one: a child inherits the soft limit, and
some programs walk every descriptor number it allows."""
_MACOS_OPEN_MAX = 10240


def make_room_for_files(wanted: int = 0) -> int:
    """Raise this process's soft open-file limit to its hard one and return the soft limit.

    Under an unlimited hard limit it asks for :data:`UNLIMITED_ROOM` or ``wanted``, the higher;
    where the system refuses that (macOS caps the soft limit at OPEN_MAX), for ``wanted``, then
    for OPEN_MAX. A soft limit already as high is left as it is.
    """
    if sys.platform != "win32":  # checked here, not returned early from, so that mypy skips it there
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return soft
        first = max(wanted, UNLIMITED_ROOM) if hard == resource.RLIM_INFINITY else hard
        for room in (first, wanted, _MACOS_OPEN_MAX):
            if soft < room and (hard == resource.RLIM_INFINITY or room <= hard):
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(resource.RLIMIT_NOFILE, (room, hard))
                    return room
        return soft
    return wanted
