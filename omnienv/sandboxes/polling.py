"""Waiting on a sandbox's pipes and sockets, for descriptors of any number.

``select.select`` cannot watch a descriptor numbered 1024 or more (``FD_SETSIZE``): it raises
"filedescriptor out of range in select()". A process that holds many sessions has that many open
files (each Jupyter session about a dozen: its kernel's ZMQ sockets, pipes and log), so with
``select`` the 85th kernel of one server could not start. :func:`wait` is the same wait on
``poll(2)``, which has no such limit; :class:`SelectOnPoll` stands in for the ``select`` module
in a library that calls ``select.select`` itself (python-xlib, for every X request).
"""

from __future__ import annotations

import math
import select
from collections.abc import Sequence
from typing import Any, ClassVar

__all__ = ["SelectOnPoll", "wait"]

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


class SelectOnPoll:
    """The ``select`` module's ``select`` and ``error``, answered by :func:`wait`.

    Readers and writers are descriptors or objects with ``fileno()``, given back as they came.
    """

    error: ClassVar[type[OSError]] = OSError

    @staticmethod
    def select(
        readers: Sequence[Any], writers: Sequence[Any], _exceptional: Sequence[Any], timeout: float | None = None
    ) -> tuple[list[Any], list[Any], list[Any]]:
        readable, writable = wait([_fd(r) for r in readers], [_fd(w) for w in writers], timeout)
        return [r for r in readers if _fd(r) in readable], [w for w in writers if _fd(w) in writable], []


def _fd(watched: Any) -> int:
    return watched if isinstance(watched, int) else int(watched.fileno())
