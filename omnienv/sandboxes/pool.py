"""A warm pool: things that are slow to start (kernels, displays) started ahead of time.

:class:`WarmPool` keeps ``size`` items started and ready, so that taking one costs microseconds.
Items are started by the pool's own threads, which live as long as the pool: a sandbox started
with bubblewrap's ``--die-with-parent`` dies with the *thread* that forked it, so no item is ever
started from a short-lived thread. Items are never reused: ``release`` kills.

Failures are typed and bounded: a start that fails is retried with a growing back-off (at most
``max_backoff`` seconds), and a caller waiting in ``acquire`` gets the start's error (as the
pool's ``error`` type) instead of a hang, or a timeout error after ``timeout`` seconds.

``create`` makes an item cheaply (it is killed by ``close`` from then on, even mid-start);
``start`` does the slow part in a pool thread; ``kill`` must be idempotent; ``alive`` tells a
ready item that died while it waited (it is killed and skipped); ``sweep`` runs once, first, in
a pool thread (to delete what the pools of a crashed process left); ``what`` names an item in
error messages ("a sandboxed kernel").
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from omnienv.core import EnvironmentFailure
from omnienv.core.threads import to_blocking_thread

__all__ = ["PoolStartError", "WarmPool"]

T = TypeVar("T")


class PoolStartError(EnvironmentFailure):
    """The pool could not hand out an item: starts fail, none became ready in time, or it is closed."""

    code = "POOL_START_FAILED"


class WarmPool(Generic[T]):
    """Keeps ``size`` items started and ready; see the module docs. Thread-safe."""

    def __init__(
        self,
        create: Callable[[], T],
        kill: Callable[[T], None],
        *,
        start: Callable[[T], None] | None = None,
        alive: Callable[[T], bool] | None = None,
        size: int = 2,
        workers: int = 2,
        timeout: float = 30.0,
        max_backoff: float = 5.0,
        error: Callable[[str], Exception] = PoolStartError,
        sweep: Callable[[], object] | None = None,
        what: str = "an item",
        name: str = "omnienv-pool",
    ) -> None:
        self.size = max(0, size)
        self.what = what
        self.timeout = timeout
        self.max_backoff = max_backoff
        self._create, self._start, self._kill = create, start, kill
        self._alive = alive or (lambda item: True)
        self._error_type = error
        self._sweep = sweep
        self._ready: deque[T] = deque()
        self._live: list[T] = []  # every item made and not yet killed: ready, starting or handed out
        self._cond = threading.Condition()
        self._starting = 0
        self._waiting = 0
        self._closed = False
        self._error: BaseException | None = None
        self._failures = 0
        self._last_failure = 0.0
        self._swept = threading.Event()
        self._threads = [
            threading.Thread(target=self._refill, name=f"{name}-{i}", daemon=True) for i in range(max(1, workers))
        ]
        for thread in self._threads:
            thread.start()

    def __repr__(self) -> str:
        return f"WarmPool(size={self.size}, ready={len(self._ready)}, live={len(self._live)})"

    @property
    def ready(self) -> int:
        return len(self._ready)

    @property
    def closed(self) -> bool:
        return self._closed

    def live(self) -> list[T]:
        """Every item of the pool still alive: ready, starting or handed out."""
        with self._cond:
            items = list(self._live)
        return [item for item in items if self._alive(item)]

    # -- the refill threads -------------------------------------------------------------------

    def _wanted(self) -> int:
        return self.size + self._waiting - len(self._ready) - self._starting

    def _backing_off(self) -> bool:
        delay = min(self.max_backoff, 0.2 * self._failures)
        return self._failures > 0 and time.monotonic() - self._last_failure < delay

    def _refill(self) -> None:
        if threading.current_thread() is self._threads[0]:
            if self._sweep is not None:
                with contextlib.suppress(Exception):
                    self._sweep()
            self._swept.set()
        self._swept.wait()  # nothing of this pool is made while the sweep runs
        while True:
            with self._cond:
                while not self._closed and (self._wanted() <= 0 or self._backing_off()):
                    self._cond.wait(timeout=0.2 if self._failures else None)
                if self._closed:
                    return
                self._starting += 1
            if not self._start_one():
                return

    def _start_one(self) -> bool:
        """Make and start one item; False when the pool closed meanwhile."""
        item: T | None = None
        try:
            item = self._create()
            with self._cond:
                self._live.append(item)
            if self._start is not None:
                self._start(item)
        except BaseException as exc:
            if item is not None:
                self._discard(item)
            with self._cond:
                self._starting -= 1
                self._error, self._failures = exc, self._failures + 1
                self._last_failure = time.monotonic()
                self._cond.notify_all()
            return True
        with self._cond:
            self._starting -= 1
            self._failures, self._error = 0, None
            closed = self._closed
            if not closed:
                self._ready.append(item)
                self._cond.notify_all()
        if closed:
            self._discard(item)
            return False
        return True

    def _discard(self, item: T) -> None:
        with self._cond:
            with contextlib.suppress(ValueError):
                self._live.remove(item)
        self._kill(item)

    # -- handing items out --------------------------------------------------------------------

    def _pop_ready(self) -> T | None:
        """A ready item that is still alive (called with the lock held)."""
        while self._ready:
            item = self._ready.popleft()
            self._cond.notify_all()  # a refill thread may start the next one
            if self._alive(item):
                return item
            with contextlib.suppress(ValueError):
                self._live.remove(item)
            threading.Thread(target=self._kill, args=(item,), daemon=True).start()
        return None

    def try_acquire(self) -> T | None:
        """A ready item at once, or None."""
        with self._cond:
            return None if self._closed else self._pop_ready()

    def acquire(self, timeout: float | None = None) -> T:
        """A ready item, waiting for one to start if none is; the pool's ``error`` when none can."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with self._cond:
            if self._closed:
                raise self._error_type("the pool is closed")
            failures_before = self._failures
            self._waiting += 1
            self._cond.notify_all()
            try:
                while True:
                    item = self._pop_ready()
                    if item is not None:
                        return item
                    if self._error is not None and self._failures > failures_before:
                        raise self._error_type(f"cannot start {self.what}: {self._error}")
                    remaining = deadline - time.monotonic()
                    if self._closed:
                        raise self._error_type("the pool is closed")
                    if remaining <= 0:
                        raise self._error_type(f"no {self.what.split(' ', 1)[-1]} became ready within {timeout:g} s")
                    self._cond.wait(remaining)
            finally:
                self._waiting -= 1

    async def aacquire(self, timeout: float | None = None) -> T:
        """``acquire`` for the event loop: at once when an item is ready, else in a thread."""
        item = self.try_acquire()
        if item is not None:
            return item
        return await to_blocking_thread(self.acquire, timeout)

    def release(self, item: T) -> None:
        """Kill an item handed out by ``acquire`` (items are never reused)."""
        self._discard(item)

    def close(self) -> None:
        """Kill every item the pool made, handed out or not, and stop its threads. Idempotent."""
        with self._cond:
            self._closed = True
            items = list(self._live)
            self._live.clear()
            self._ready.clear()
            self._cond.notify_all()
        for item in items:
            self._kill(item)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=self.timeout)
        with self._cond:  # a start under way when we closed kills its own item; catch any straggler
            stragglers = list(self._live)
            self._live.clear()
        for item in stragglers:
            self._kill(item)

    def __enter__(self) -> WarmPool[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
