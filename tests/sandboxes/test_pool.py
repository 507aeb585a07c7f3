"""The generic warm pool: sizes, typed errors with back-off, sync and async acquire, killing everything."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from omnienv.core import EnvironmentFailure
from omnienv.sandboxes.pool import PoolStartError, WarmPool
from tests.polling import eventually


class Item:
    made = 0

    def __init__(self) -> None:
        Item.made += 1
        self.number = Item.made
        self.started_in = ""
        self.killed = False
        self.dead = False


def started(item: Item) -> None:
    item.started_in = threading.current_thread().name


def kill(item: Item) -> None:
    item.killed = True


def test_items_are_started_ahead_by_the_pools_threads_and_killed_on_release() -> None:
    with WarmPool(Item, kill, start=started, size=2, name="test-pool") as pool:
        eventually(lambda: pool.ready == 2)
        item = pool.acquire()
        assert item.started_in.startswith("test-pool-") and not item.killed
        eventually(lambda: pool.ready == 2)  # refilled
        pool.release(item)
        assert item.killed and item not in pool.live()
        assert len(pool.live()) == 2


def test_close_kills_ready_handed_out_and_starting_items() -> None:
    gate = threading.Event()
    starting: list[Item] = []

    def slow(item: Item) -> None:
        if item.number > 2:
            starting.append(item)
            gate.wait(5)
            if item.killed:
                raise RuntimeError("killed while starting")

    def kill_and_wake(item: Item) -> None:  # as killing a sandbox ends the start waiting on it
        kill(item)
        gate.set()

    Item.made = 0
    pool = WarmPool(Item, kill_and_wake, start=slow, size=2, workers=1)
    eventually(lambda: pool.ready == 2)
    handed = pool.acquire()
    eventually(lambda: bool(starting))
    began = time.monotonic()
    pool.close()  # with one start under way
    assert handed.killed and starting[0].killed and time.monotonic() - began < 2
    with pytest.raises(PoolStartError, match="closed"):
        pool.acquire()


def test_start_failures_are_typed_backed_off_and_recovered_from() -> None:
    class Boom(EnvironmentFailure):
        code = "BOOM"

    failures = {"left": 3}

    def flaky(item: Item) -> None:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise OSError("no sandbox")

    with WarmPool(Item, kill, start=flaky, size=1, workers=1, error=Boom, what="a thing") as pool:
        with pytest.raises(Boom, match="cannot start a thing: no sandbox"):
            pool.acquire(timeout=5)
        eventually(lambda: pool.ready == 1, timeout=10)  # after the back-off, starts succeed again
        assert not pool.acquire().killed


def test_a_ready_item_that_died_is_skipped_and_killed() -> None:
    with WarmPool(Item, kill, alive=lambda item: not item.dead, size=2) as pool:
        eventually(lambda: pool.ready == 2)
        first = pool._ready[0]
        first.dead = True
        item = pool.acquire()
        assert item is not first
        eventually(lambda: first.killed)


def test_nothing_ready_in_time_is_a_typed_timeout_and_async_acquire_works() -> None:
    never = threading.Event()
    with WarmPool(Item, kill, start=lambda item: never.wait(10) and None, size=0, workers=1) as pool:
        with pytest.raises(PoolStartError, match=r"no item became ready within 0\.2 s"):
            pool.acquire(timeout=0.2)
        never.set()
    with WarmPool(Item, kill, size=1) as pool:
        item = asyncio.run(pool.aacquire(timeout=5))
        assert isinstance(item, Item) and not item.killed
