"""The running loop's default executor with every thread taken, as a few long waits take it."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor


@contextlib.asynccontextmanager
async def default_executor_busy() -> AsyncIterator[None]:
    """Inside, a call sent to the loop's default executor (``asyncio.to_thread``) never starts.

    That executor has ``min(32, cores + 4)`` threads; sessions waiting in it on long commands, or on
    kernels and displays still starting, take them all. One thread, held, stands for that.
    """
    loop = asyncio.get_running_loop()
    release = threading.Event()
    loop.set_default_executor(ThreadPoolExecutor(1, thread_name_prefix="busy-default"))
    held = loop.run_in_executor(None, release.wait)
    try:
        yield
    finally:
        release.set()
        await held
