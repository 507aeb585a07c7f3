"""Small environments for the Ray tests, shipped to the actors by value (cloudpickle)."""

from __future__ import annotations

import random
import threading
import time

from omnienv.core import Environment, Task, tool


class SlowWork(Environment):
    """A blocking environment: its tools run on the host actor's thread pool, never its loop."""

    name = "slow_work"
    max_turns = 20

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "ready"

    @tool
    def where(self) -> str:
        """Name the thread the tool runs on."""
        return threading.current_thread().name

    @tool
    def stall(self, seconds: float, started: str = "") -> str:
        """Block for a while (a stuck simulator).

        Args:
            seconds: How long to block.
            started: A file to create once blocking (tells a test the call is running).
        """
        if started:
            with open(started, "w") as f:
                f.write("stalling")
        time.sleep(seconds)
        return "done"


class Tracked(Environment):
    """Writes "closed" to the file its ``track`` tool named when it is closed: tells whether a pool
    shutting down closed the environments its actors still held. Inline (never blocks)."""

    name = "tracked"
    blocking = False
    path: str | None = None

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "ready"

    @tool
    def track(self, path: str) -> str:
        """Name the file to write when closed.

        Args:
            path: Where to write "closed".
        """
        self.path = path
        return "tracking"

    def teardown(self) -> None:
        if self.path is not None:
            with open(self.path, "w") as f:
                f.write("closed")


class TrackedBlocking(Tracked):
    """:class:`Tracked` on an async host (a blocking environment)."""

    name = "tracked_blocking"
    blocking = True
