"""The pool of real sandboxed kernels the Jupyter sandbox tests share.

Module-scoped: each test module that asks for ``pool`` starts one of its own (and checks that
it stops every kernel), and its tests share the ready kernels instead of each waiting for one.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from omnienv.sandboxes.jupyter import KernelPool


@pytest.fixture(scope="module")
def pool() -> Iterator[KernelPool]:
    pool = KernelPool(2)
    try:
        yield pool
    finally:
        pool.close()
    assert not pool.live_kernels()
