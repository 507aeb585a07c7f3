"""Threads for calls that block: one growing pool, never the event loop's default one.

The loop's default executor (what ``asyncio.to_thread`` uses) has ``min(32, cores + 4)`` threads:
6 on a 2-core machine. The calls omnienv sends to threads mostly *wait*: a shell command, a
build, a test suite, a kernel or display still starting. A few sessions waiting there would hold
every thread, and every other session's call, however short, would queue behind them (its wait
counted against its step deadline). Here a thread starts whenever every thread is busy.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["MAX_BLOCKING_THREADS", "blocking_threads", "shared_blocking_threads", "to_blocking_thread"]

T = TypeVar("T")

MAX_BLOCKING_THREADS = 1024
"""Blocking calls in flight at once in one pool, unless the pool is given a lower limit."""


def blocking_threads(limit: int = 0, name: str = "omnienv-env") -> ThreadPoolExecutor:
    """A pool for blocking calls: a thread starts whenever every thread is busy, up to ``limit``
    (0: :data:`MAX_BLOCKING_THREADS`); idle sessions hold none.

    A lower ``limit`` suits calls that keep a core busy the whole time.
    """
    return ThreadPoolExecutor(limit or MAX_BLOCKING_THREADS, thread_name_prefix=name)


_shared_lock = threading.Lock()
_shared: ThreadPoolExecutor | None = None


def shared_blocking_threads() -> ThreadPoolExecutor:
    """The pool of this process's blocking calls that have none of their own (made on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = blocking_threads(name="omnienv-blocking")
        return _shared


def _forget_shared_pool() -> None:
    """In a forked child the parent's pool threads do not exist, yet the pool would count its idle
    ones as there and never start a thread: the child makes a pool of its own."""
    global _shared, _shared_lock
    _shared, _shared_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_shared_pool)


async def to_blocking_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``asyncio.to_thread`` on :func:`shared_blocking_threads`: ``fn(*args, **kwargs)`` in a thread
    (with the caller's context variables), never queued behind other calls that wait."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(shared_blocking_threads(), call)
