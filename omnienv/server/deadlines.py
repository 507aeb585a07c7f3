"""Step deadlines on one coarse timer per server.

``asyncio.timeout`` schedules a timer for every use and cancels it after: about 6 µs, as much as a
whole Wordle step. A server bounds every step of an environment it cannot run inline (a blocking
one on its threads, an async one, one on a Ray actor) by the same deadline, so it keeps one
schedule instead: a step costs a dict entry, and one timer, rearmed every tick while steps run,
cancels those past their deadline. A step is cut at most one tick late (a tenth of the deadline,
at most a second).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = ["DeadlineExpired", "StepDeadlines"]

T = TypeVar("T")


class DeadlineExpired(Exception):
    """The awaited call ran past the deadline and was cancelled: told apart from a
    ``TimeoutError`` the call raised itself."""


class StepDeadlines:
    """Bounds awaited calls by ``seconds`` each, all on one loop's timer."""

    def __init__(self, seconds: float) -> None:
        if seconds <= 0:
            raise ValueError(f"a deadline must be positive, got {seconds!r}")
        self.seconds = seconds
        self.tick = min(1.0, seconds / 10)
        self._due: dict[asyncio.Task[Any], float] = {}
        self._expired: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def run(self, call: Awaitable[T]) -> T:
        """``await call``, or :class:`DeadlineExpired` once it has run ``seconds`` (up to a tick
        more). A cancellation from elsewhere (a client that left) stays a cancellation."""
        task = asyncio.current_task()
        if task is None or task in self._due:  # not in a task, or bounded already: the plain way
            return await self._run_alone(call)
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (tests run several): the old one's state is void
            self._loop, self._timer = loop, None
            self._due.clear()
            self._expired.clear()
        cancelling = task.cancelling()
        self._due[task] = loop.time() + self.seconds
        if self._timer is None:
            self._timer = loop.call_at(loop.time() + self.tick, self._check)
        try:
            return await call
        except asyncio.CancelledError:
            if task in self._expired:
                self._expired.discard(task)
                if task.uncancel() <= cancelling:
                    raise DeadlineExpired from None
            raise
        finally:
            del self._due[task]
            if task in self._expired:  # cut, but the call swallowed the cancellation and returned
                self._expired.discard(task)
                task.uncancel()

    async def _run_alone(self, call: Awaitable[T]) -> T:
        try:
            async with asyncio.timeout(self.seconds) as scope:
                return await call
        except TimeoutError:
            if scope.expired():
                raise DeadlineExpired from None
            raise

    def _check(self) -> None:
        loop = self._loop
        assert loop is not None
        now = loop.time()
        for task, due in self._due.items():
            if due <= now and task not in self._expired:
                self._expired.add(task)
                task.cancel()
        self._timer = loop.call_at(now + self.tick, self._check) if self._due else None
