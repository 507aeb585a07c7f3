"""Waiting on a sandbox's pipes and sockets, for descriptors of any number.

``select.select`` cannot watch a descriptor numbered 1024 or more (``FD_SETSIZE``): it raises
"filedescriptor out of range in select()". A process that holds many sessions has that many open
files (each Jupyter session about a dozen: its kernel's ZMQ sockets, pipes and log), so with
``select`` the 85th kernel of one server could not start. :func:`wait` is the same wait on
``poll(2)``, which has no such limit.
"""

from __future__ import annotations

import math
import select
from collections.abc import Sequence

__all__ = ["wait"]

_READ = select.POLLIN | select.POLLPRI
_ENDED = select.POLLHUP | select.POLLERR | select.POLLNVAL


def wait(
    readers: Sequence[int], writers: Sequence[int] = (), timeout: float | None = None
) -> tuple[list[int], list[int]]:
    """The descriptors of ``readers`` ready to read and of ``writers`` ready to write, after waiting up
    to ``timeout`` seconds (None: until one is).

    As with ``select``, a descriptor whose other end hung up or that is in error counts as ready:
    the read (end of file) or write (an error) that follows says what happened.
    """
    masks: dict[int, int] = {}
    for fd in readers:
        masks[fd] = masks.get(fd, 0) | _READ
    for fd in writers:
        masks[fd] = masks.get(fd, 0) | select.POLLOUT
    poller = select.poll()
    for fd, mask in masks.items():
        poller.register(fd, mask)
    events = dict(poller.poll(None if timeout is None else math.ceil(max(0.0, timeout) * 1000)))
    readable = [fd for fd in readers if events.get(fd, 0) & (_READ | _ENDED)]
    writable = [fd for fd in writers if events.get(fd, 0) & (select.POLLOUT | _ENDED)]
    return readable, writable
