"""What the channel tests share: running a scenario on an event loop of its own, with a time limit."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 30))
