"""How long an environment's calls hold the event loop, which a server shares among its sessions.

``check_env`` drives the environment through :class:`Yielding` while :func:`watch_the_loop` runs
beside it: a sync call of a non-blocking environment, or a blocking call inside an async tool,
shows as a turn of the loop longer than :data:`HELD_LIMIT`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from omnienv.core.adapters import AsyncEnv
from omnienv.core.tasks import Task
from omnienv.core.types import Observation, State, StepResult, ToolCall

__all__ = ["HELD_LIMIT", "Yielding", "watch_the_loop"]

HELD_LIMIT = 0.5
"""Seconds one call may hold the event loop (a sync call of a non-blocking environment, a blocking
call inside an async tool) before the check fails: far above scheduling noise, far below a stall."""


class Yielding:
    """An environment whose every call starts and ends by letting the loop run the others, so that
    :func:`watch_the_loop` sees how long each call alone holds it (an async environment whose
    calls never wait would otherwise run the whole check in one turn of the loop)."""

    def __init__(self, env: AsyncEnv) -> None:
        self.inner, self.env = env, getattr(env, "env", env)
        self.name, self.tools = env.name, env.tools

    async def _call(self, call: Awaitable[Any]) -> Any:
        await asyncio.sleep(0)
        try:
            return await call
        finally:
            await asyncio.sleep(0)

    async def reset(self, task: Task | str | None = None, seed: int | None = None) -> Observation:
        return await self._call(self.inner.reset(task, seed))  # type: ignore[no-any-return]

    async def step(self, call: ToolCall) -> StepResult:
        return await self._call(self.inner.step(call))  # type: ignore[no-any-return]

    async def end(self) -> StepResult:
        return await self._call(self.inner.end())  # type: ignore[no-any-return]

    async def state(self) -> State:
        return await self._call(self.inner.state())  # type: ignore[no-any-return]

    async def close(self) -> None:
        await self._call(self.inner.close())


async def watch_the_loop(longest: list[float]) -> None:
    """Keep in ``longest[0]`` the longest time the event loop went without running this task."""
    loop = asyncio.get_running_loop()
    while True:
        before = loop.time()
        await asyncio.sleep(0.01)
        longest[0] = max(longest[0], loop.time() - before - 0.01)
