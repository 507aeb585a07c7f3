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
    def stall(self, seconds: float) -> str:
        """Block for a while (a stuck simulator).

        Args:
            seconds: How long to block.
        """
        time.sleep(seconds)
        return "done"
