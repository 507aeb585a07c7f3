"""Warm displays: :class:`DisplayPool` keeps displays started, so a reset takes one off the shelf.

Built on the generic :class:`~omnienv.sandboxes.pool.WarmPool`: displays start in the pool's own
long-lived threads (bubblewrap's ``--die-with-parent`` follows the *thread* that forked it), a
display that died on the shelf is skipped, a failing start is retried with back-off and reported
as a :class:`~omnienv.sandboxes.desktop.DisplayError`, and the sandboxes of a dead owner are swept
when a pool starts. A taken display is never reused: ``release`` reaps it in the background and
the pool starts a fresh one, so no episode ever sees another's windows or files.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from omnienv.core.threads import to_blocking_thread
from omnienv.sandboxes.desktop import DisplayError
from omnienv.sandboxes.pool import WarmPool
from omnienv.sandboxes.upkeep import sweep_stale
from omnienv.sandboxes.xvfb.display import PREFIX, DisplaySpec, XvfbDisplay

DEFAULT_SPEC = DisplaySpec()

__all__ = ["DisplayPool", "shared_pool"]


@dataclass(slots=True)
class _Claim:
    """What a cancelled ``take`` and its worker thread agree on: who reaps the display."""

    abandoned: bool = False
    display: XvfbDisplay | None = None


class DisplayPool:
    """``size`` displays of ``spec`` kept warm; see the module docs. Thread-safe."""

    def __init__(
        self,
        spec: DisplaySpec = DEFAULT_SPEC,
        size: int = 2,
        start: Callable[[DisplaySpec], XvfbDisplay] = XvfbDisplay.start,
    ) -> None:
        self.spec = spec
        self.size = max(0, size)
        self.start = start
        self._pool: WarmPool[XvfbDisplay] = WarmPool(
            lambda: start(spec),
            XvfbDisplay.close_now,
            alive=XvfbDisplay.alive,
            size=self.size,
            timeout=max(30.0, spec.start_timeout * 3),
            error=DisplayError,
            sweep=lambda: sweep_stale(prefix=PREFIX),
            name="omnienv-xvfb",
        )
        self._reaper = ThreadPoolExecutor(max_workers=2, thread_name_prefix="omnienv-xvfb-reap")

    def __repr__(self) -> str:
        return f"DisplayPool({self.spec.width}x{self.spec.height}, ready={self._pool.ready}/{self.size})"

    @property
    def closed(self) -> bool:
        return self._pool.closed

    @property
    def ready(self) -> int:
        return self._pool.ready

    def acquire(self) -> XvfbDisplay:
        """A warm display if one is ready, else one the pool starts now (DisplayError if none can)."""
        return self._pool.acquire()

    async def take(self) -> XvfbDisplay:
        """``acquire`` off the event loop; a display given to a cancelled caller is reaped, not lost."""
        display = self._pool.try_acquire()
        if display is not None:
            return display
        lock, claim = threading.Lock(), _Claim()

        def acquire() -> XvfbDisplay:
            taken = self._pool.acquire()
            with lock:
                if claim.abandoned:
                    self.release(taken)
                else:
                    claim.display = taken
            return taken

        try:
            return await to_blocking_thread(acquire)
        except asyncio.CancelledError:
            with lock:
                claim.abandoned = True
                taken = claim.display
            if taken is not None:
                self.release(taken)
            raise

    def wait_ready(self, count: int | None = None, timeout: float = 30.0) -> bool:
        """Block until ``count`` displays are warm (benchmarks and tests use it to start level)."""
        count = self.size if count is None else count
        deadline = time.monotonic() + timeout
        while self._pool.ready < count:
            if time.monotonic() > deadline or self._pool.closed:
                return False
            time.sleep(0.01)
        return True

    def release(self, display: XvfbDisplay) -> None:
        """Reap ``display`` in the background (closing takes tens of milliseconds)."""
        try:
            self._reaper.submit(self._pool.release, display)
        except RuntimeError:  # shutting down: do it here
            self._pool.release(display)

    def live(self) -> list[XvfbDisplay]:
        return self._pool.live()

    def close(self) -> None:
        """Reap every display the pool made, handed out or not, and wait for background reaping."""
        self._pool.close()
        self._reaper.shutdown(wait=True)


_pools: dict[tuple[DisplaySpec, int], DisplayPool] = {}
_pools_lock = threading.Lock()


def shared_pool(spec: DisplaySpec = DEFAULT_SPEC, size: int | None = None) -> DisplayPool:
    """The process-wide pool for ``spec`` (size from ``OMNIENV_DESKTOP_POOL``, default 2)."""
    if size is None:
        size = int(os.environ.get("OMNIENV_DESKTOP_POOL", "2"))
    with _pools_lock:
        pool = _pools.get((spec, size))
        if pool is None or pool.closed:
            pool = _pools[(spec, size)] = DisplayPool(spec, size)
        return pool


@atexit.register
def _close_pools() -> None:
    with _pools_lock:
        pools: list[Any] = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()
