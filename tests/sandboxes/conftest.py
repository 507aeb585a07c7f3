"""What the sandbox tests share: the pool of real sandboxed kernels, and a fresh X display.

``pool`` is module-scoped: each test module that asks for it starts one of its own (and checks
that it stops every kernel), and its tests share the ready kernels instead of each waiting for one.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from omnienv.sandboxes.jupyter import KernelPool
from omnienv.sandboxes.xvfb import XvfbDisplay


@pytest.fixture(scope="module")
def pool() -> Iterator[KernelPool]:
    pool = KernelPool(2)
    try:
        yield pool
    finally:
        pool.close()
    assert not pool.live_kernels()


@pytest.fixture
def display() -> Iterator[XvfbDisplay]:
    started = XvfbDisplay.start()
    try:
        yield started
    finally:
        started.close_now()
