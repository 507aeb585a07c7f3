"""The actor side: one Ray worker process hosting the environments of many sessions.

An actor per session would cost a worker process per session (hundreds of MB each); one actor
holds a dict of environment instances instead, so a cluster hosts thousands of sessions on a few
processes. Its methods are coroutines (an async actor): non-blocking environments such as Wordle
run inline on the actor's event loop, blocking ones in the actor's own bounded thread pool.

Every method answers a :data:`Reply` instead of raising, so that an environment's own error (an
``OmniEnvError``) reaches the caller as the same typed exception, and a batch answers per item.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeAlias

from omnienv.core.adapters import AsyncEnv, as_async
from omnienv.core.env import AsyncEnvironment, EnvironmentBase
from omnienv.core.errors import EnvironmentFailure, NotResetError, OmniEnvError
from omnienv.core.registry import load_environment
from omnienv.core.tasks import Task
from omnienv.core.types import ToolCall

__all__ = ["EnvHost", "Reply", "unwrap"]

Reply: TypeAlias = tuple[bool, Any]
"""``(True, value)`` or ``(False, OmniEnvError)``: plain data, cheap to ship back."""


_SESSION_METHODS = frozenset({"open", "start", "reset", "step", "end", "state", "close"})


def unwrap(reply: Reply) -> Any:
    """The value of a reply, or its error raised in the caller's process."""
    ok, value = reply
    if ok:
        return value
    raise value


def _error(exc: BaseException) -> Reply:
    if isinstance(exc, OmniEnvError):
        return False, exc
    return False, EnvironmentFailure(f"the environment host failed: {type(exc).__name__}: {exc}")


class EnvHost:
    """Environments of many sessions in one process, addressed by session key.

    Wrapped with ``ray.remote`` by :class:`~omnienv.ray.placement.HostPool`, which also picks
    its resource requests; the class itself imports nothing from Ray and runs in-process too.
    """

    def __init__(self, env: type[EnvironmentBase] | str, threads: int = 0) -> None:
        self.env_class = load_environment(env) if isinstance(env, str) else env
        cls = self.env_class
        self.blocking = not issubclass(cls, AsyncEnvironment) and cls.blocking
        workers = threads or min(32, (os.cpu_count() or 1) + 4)
        self.executor = ThreadPoolExecutor(workers, "omnienv-host") if self.blocking else None
        self.envs: dict[str, AsyncEnv] = {}

    def _env(self, key: str) -> AsyncEnv:
        env = self.envs.get(key)
        if env is None:
            raise NotResetError(f"this worker has no environment for session '{key}': call reset() first")
        return env

    async def _new(self, key: str) -> None:
        if key in self.envs:
            return
        if self.executor is not None:
            instance = await asyncio.get_running_loop().run_in_executor(self.executor, self.env_class)
        else:
            instance = self.env_class()
        self.envs[key] = as_async(instance, self.executor)

    # -- one session at a time ----------------------------------------------------------------

    async def open(self, key: str) -> Reply:
        try:
            await self._new(key)
        except Exception as exc:
            return False, EnvironmentFailure(
                f"could not create a {self.env_class.__name__} on its worker: {type(exc).__name__}: {exc}"
            )
        return True, None

    async def reset(self, key: str, task: Task | str | None = None, seed: int | None = None) -> Reply:
        """Reset the session's environment, creating it first if this worker has none yet."""
        opened = await self.open(key)
        if not opened[0]:
            return opened
        try:
            return True, await self.envs[key].reset(task, seed)
        except Exception as exc:
            return _error(exc)

    async def start(self, key: str, task: Task | str | None = None, seed: int | None = None) -> Reply:
        """:meth:`reset`, answering ``(observation, state)``: the caller keeps the episode's
        identity, so it can still describe the episode after this worker is gone."""
        reply = await self.reset(key, task, seed)
        if not reply[0]:
            return reply
        try:
            return True, (reply[1], await self.envs[key].state())
        except Exception as exc:
            return _error(exc)

    async def step(self, key: str, call: ToolCall) -> Reply:
        try:
            return True, await self._env(key).step(call)
        except Exception as exc:
            return _error(exc)

    async def end(self, key: str) -> Reply:
        try:
            return True, await self._env(key).end()
        except Exception as exc:
            return _error(exc)

    async def state(self, key: str) -> Reply:
        try:
            return True, await self._env(key).state()
        except Exception as exc:
            return _error(exc)

    async def close(self, key: str) -> Reply:
        env = self.envs.pop(key, None)
        if env is None:
            return True, None
        try:
            await env.close()
        except Exception as exc:
            return _error(exc)
        return True, None

    # -- batches: one actor call for many sessions --------------------------------------------

    async def reset_many(self, items: list[tuple[str, Task | str | None, int | None]]) -> list[Reply]:
        return list(await asyncio.gather(*(self.reset(key, task, seed) for key, task, seed in items)))

    async def step_many(self, items: list[tuple[str, ToolCall]]) -> list[Reply]:
        return list(await asyncio.gather(*(self.step(key, call) for key, call in items)))

    async def state_many(self, keys: list[str]) -> list[Reply]:
        return list(await asyncio.gather(*(self.state(key) for key in keys)))

    async def close_many(self, keys: list[str]) -> list[Reply]:
        return list(await asyncio.gather(*(self.close(key) for key in keys)))

    async def call_many(self, calls: list[tuple[str, str, tuple[Any, ...]]]) -> list[Reply]:
        """Many sessions' calls in one actor call (``(method, key, args)`` each), run concurrently:
        the front server coalesces the calls of one event-loop turn into one of these."""
        return list(await asyncio.gather(*(self._dispatch(method, key, args) for method, key, args in calls)))

    async def _dispatch(self, method: str, key: str, args: tuple[Any, ...]) -> Reply:
        if method not in _SESSION_METHODS:
            return False, EnvironmentFailure(f"the environment host has no session method '{method}'")
        return await getattr(self, method)(key, *args)

    # -- introspection ------------------------------------------------------------------------

    async def info(self) -> dict[str, Any]:
        """Where this host runs and how many sessions it holds (for operators and tests)."""
        return {"pid": os.getpid(), "sessions": len(self.envs), "env": self.env_class.name}
