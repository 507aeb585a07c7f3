"""``RemoteEnv``: a session's environment living on a Ray actor, behind the ``AsyncEnv`` face.

The server's session manager drives it exactly like a local environment, so every transport
(``/ws``, HTTP sessions, MCP, dialect routers) reaches actors without knowing they exist. Each
call is an actor method call awaited on the caller's event loop; the calls of one loop turn to
the same actor travel together (:mod:`omnienv.ray.batching`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ray.exceptions import RayActorError

from omnienv.core.errors import EnvironmentFailure, WorkerLostError
from omnienv.core.tasks import Task
from omnienv.core.tools import ToolSpec
from omnienv.core.types import Observation, State, StepResult, ToolCall
from omnienv.ray.batching import CallBatcher
from omnienv.ray.channel import ChannelLost
from omnienv.ray.host import unwrap
from omnienv.ray.placement import Host, HostPool

__all__ = ["RemoteEnv", "remote_env_factory"]

_REPLACEMENT_WAIT = 30.0
"""How long a session waits for a replacement actor when every actor is dead."""


class RemoteEnv:
    """One session on one host actor. After its actor dies ``step`` raises
    :class:`~omnienv.core.WorkerLostError`, ``state`` describes the episode as last known here
    (the server adds the failure flag), and ``reset`` moves the session to the least loaded live
    actor and starts over there."""

    __slots__ = ("closed", "host", "key", "known", "name", "pool", "tools")

    def __init__(self, pool: HostPool, host: Host, key: str) -> None:
        self.pool = pool
        self.host: Host | None = host
        self.key = key
        self.name: str = pool.env_class.name
        self.tools: Mapping[str, ToolSpec] = pool.env_class.tools
        self.known = State(None, 0)
        """The episode as last seen from here (no env fields): what ``state`` says once lost."""
        self.closed = False

    def __repr__(self) -> str:
        where = f"actor {self.host.index}" if self.host else "no actor"
        return f"RemoteEnv({self.name}, session {self.key[:8]}, {where})"

    @classmethod
    async def open(cls, pool: HostPool, wait: float = _REPLACEMENT_WAIT) -> RemoteEnv:
        """Place a new session on the least loaded live actor and create its environment there;
        an actor found dead on the way is skipped for the next one. With every actor dead, wait
        up to ``wait`` seconds for a replacement to answer before giving up."""
        key = uuid.uuid4().hex
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            env = cls(pool, await _place(pool, deadline), key)  # raises once no actor is left
            try:
                await env._call("open")
            except WorkerLostError:
                env._release()
                continue
            except BaseException:
                env._release()
                raise
            return env

    async def _call(self, method: str, *args: Any) -> Any:
        host = self.host
        if host is None:
            if self.closed:
                raise EnvironmentFailure("this session is closed")
            raise WorkerLostError("this session's Ray actor died and no live actor took it: call reset() again")
        if not host.alive:
            raise self.pool.lost(host, host.death)
        loop = asyncio.get_running_loop()
        batcher = host.batcher
        if batcher is None or batcher.loop is not loop:
            if batcher is not None:
                batcher.close()
            batcher = host.batcher = CallBatcher(host.actor, loop, channel=host.channel)
        try:
            reply = await batcher.call(method, self.key, args)
        except (RayActorError, ChannelLost) as exc:
            raise self.pool.lost(host, exc) from None
        return unwrap(reply)

    def _release(self) -> None:
        if self.host is not None:
            self.pool.release(self.host)
            self.host = None

    async def reset(self, task: Task | str | None = None, seed: int | None = None) -> Observation:
        if not self.closed and (self.host is None or not self.host.alive):  # start over on a live actor
            self._release()
            self.host = await _place(self.pool, asyncio.get_running_loop().time() + _REPLACEMENT_WAIT)
        observation, state = await self._call("start", task, seed)
        self.known = State(state.episode_id, state.step_count, state.done, state.truncated, state.task_id)
        return observation

    async def step(self, call: ToolCall) -> StepResult:
        result: StepResult = await self._call("step", call)
        known = self.known
        known.step_count += 1
        known.done, known.truncated = result.done, result.truncated
        return result

    async def end(self) -> StepResult:
        result: StepResult = await self._call("end")
        self.known.done, self.known.truncated = result.done, result.truncated
        return result

    async def state(self) -> State:
        try:
            return await self._call("state")
        except WorkerLostError:
            return replace(self.known, fields={})

    async def close(self) -> None:
        self.closed = True
        host = self.host
        if host is None:
            return
        try:
            if host.alive:
                await self._call("close")
        except WorkerLostError:  # its actor died: nothing is left to close
            pass
        finally:
            self._release()


async def _place(pool: HostPool, deadline: float) -> Host:
    """``pool.place()``, waiting until ``deadline`` (loop time) for a replacement actor when
    every actor is dead and one is starting."""
    if not pool.live and pool.starting:
        await pool.wait_live(max(0.0, deadline - asyncio.get_running_loop().time()))
    return pool.place()


def remote_env_factory(pool: HostPool) -> Any:
    """The server's ``env_factory``: each new session becomes a :class:`RemoteEnv` on ``pool``."""

    async def make() -> RemoteEnv:
        return await RemoteEnv.open(pool)

    return make
