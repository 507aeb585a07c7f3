"""Attacks on real servers on 127.0.0.1: the fixtures of tests/server, and an environment counting its instances."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator

import pytest

from omnienv.core import Environment, Task, tool
from tests.server.conftest import serve  # noqa: F401  (the fixture: real servers, always stopped)


class Counted(Environment):
    """Counts its live instances (``live``) and the most ever alive at once (``peak``)."""

    live = 0
    peak = 0
    lock = threading.Lock()

    def __init__(self) -> None:
        with Counted.lock:
            Counted.live += 1
            Counted.peak = max(Counted.peak, Counted.live)
        self._counted = True

    def teardown(self) -> None:
        with Counted.lock:
            if self._counted:
                self._counted = False
                Counted.live -= 1

    def setup(self, task: Task | None, rng: random.Random) -> str:
        time.sleep(0.02)  # long enough for concurrent calls to overlap
        return "ready"

    @tool
    def ping(self) -> str:
        """Answer at once."""
        return "pong"


@pytest.fixture
def counted() -> Iterator[type[Counted]]:
    """The class, its counters at zero."""
    with Counted.lock:
        Counted.live = Counted.peak = 0
    yield Counted
