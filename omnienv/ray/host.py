"""The actor side: one Ray worker process hosting the environments of many sessions.

An actor per session would cost a worker process per session (hundreds of MB each); one actor
holds a dict of environment instances instead, so a cluster hosts thousands of sessions on a few
processes. Its methods are coroutines (an async actor): blocking environments run in the
actor's own thread pool (a thread for each call in flight), async ones on its event loop.
Synchronous non-blocking ones (Wordle) get a plain single-threaded actor instead
(:class:`InlineEnvHost`): same code, no loop.
Between processes a batch of calls and its replies travel as one pickled ``bytes`` each, through
Ray (``call_blob``) or, for a front server, over a direct connection to the actor
(:mod:`omnienv.ray.channel`, opened by ``info(channel=True)``).

Every method answers a :data:`Reply` instead of raising, so that an environment's own error (an
``OmniEnvError``) reaches the caller as the same typed exception, and a batch answers per item.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeAlias, TypeVar

from omnienv.core.adapters import AsyncEnv, as_async
from omnienv.core.env import AsyncEnvironment, EnvironmentBase
from omnienv.core.errors import EnvironmentFailure, NotResetError, OmniEnvError
from omnienv.core.registry import load_environment
from omnienv.core.tasks import Task
from omnienv.core.threads import blocking_threads
from omnienv.core.types import ToolCall
from omnienv.ray.channel import AsyncChannelServer, ThreadChannelServer

__all__ = ["Call", "EnvHost", "InlineEnvHost", "Reply", "encode", "host_class", "is_inline", "unwrap"]

T = TypeVar("T")
Reply: TypeAlias = tuple[bool, Any]
"""``(True, value)`` or ``(False, OmniEnvError)``: plain data, cheap to ship back."""
Call: TypeAlias = tuple[str, str, tuple[Any, ...]]
"""``(method, session key, args)``: one session's call in a batch."""


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
        self.inline = is_inline(cls)
        """A synchronous, non-blocking environment (Wordle): its calls finish without ever
        suspending, so a batch runs them one after the other instead of one task each."""
        self.executor = blocking_threads(threads, "omnienv-host") if self.blocking else None
        self.envs: dict[str, AsyncEnv] = {}
        self.channel: AsyncChannelServer | None = None

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

    async def stop(self, exit_within: float | None = None) -> int:
        """Close every session's environment: the pool is shutting this host down, and what the
        environments started (kernels, displays, sandboxes) must go with them, not outlive the
        process. The pool then has the host exit through Ray, which runs the process's exit
        handlers (those take process-wide pools of kernels down). Answers how many it closed; an
        environment that fails to close keeps no other from closing.

        ``exit_within`` (a host actor's pool passes it): end the process that many seconds from
        now if it is still running then. Python waits for the host's threads before it runs the
        exit handlers, so a blocking call stuck on one would hold the exit forever, and Ray's
        ``ray.kill`` no longer reaches an actor that has begun exiting."""
        if exit_within is not None:
            timer = threading.Timer(exit_within, os._exit, args=(1,))
            timer.daemon = True
            timer.start()
        envs, self.envs = list(self.envs.values()), {}
        if self.inline:  # nothing suspends: one after the other, without a task each
            for env in envs:
                await _quietly(env.close())
        else:
            await asyncio.gather(*(_quietly(env.close()) for env in envs))
        return len(envs)

    # -- batches: one actor call for many sessions --------------------------------------------

    async def call_many(self, calls: list[Call]) -> list[Reply]:
        """Many sessions' calls in one actor call (``(method, key, args)`` each), run concurrently:
        the front server coalesces the calls of one event-loop turn into one of these.

        Calls that cannot suspend (an ``inline`` environment's) run in order, which is the same
        thing without a task per call; the others run as concurrent tasks, so that one slow
        call does not hold up the rest of its batch."""
        if self.inline:
            return [await self._dispatch(method, key, args) for method, key, args in calls]
        return list(await asyncio.gather(*(self._dispatch(method, key, args) for method, key, args in calls)))

    async def call_blob(self, blob: bytes) -> bytes:
        """:meth:`call_many` on a pickled batch, answering the pickled replies: the form batches
        take between processes (:func:`encode`)."""
        return encode(await self.call_many(pickle.loads(blob)))

    async def _dispatch(self, method: str, key: str, args: tuple[Any, ...]) -> Reply:
        if method not in _SESSION_METHODS:
            return False, EnvironmentFailure(f"the environment host has no session method '{method}'")
        return await getattr(self, method)(key, *args)

    # -- introspection ------------------------------------------------------------------------

    async def info(self, channel: bool = False) -> dict[str, Any]:
        """Where this host runs and how many sessions it holds (for operators and tests): its
        process, and on a Ray actor its node's id and address. ``channel=True`` also opens (once)
        the direct connection a front server sends its batches over, and answers its address."""
        info = {"pid": os.getpid(), "sessions": len(self.envs), "env": self.env_class.name, **_ray_node()}
        if channel:
            if self.channel is None:
                self.channel = AsyncChannelServer(self.call_blob, _channel_host(info))
                await self.channel.start()
            info["channel"] = self.channel.address
        return info


class InlineEnvHost:
    """The host of an ``inline`` environment (synchronous and non-blocking, like Wordle) as a
    plain, single-threaded Ray actor.

    Its calls never suspend, so an event loop would only add cost: Ray hands an async actor's
    every call from the thread that receives it to the loop's thread and back, which on a small
    machine costs more than a batch of Wordle steps. This runs :class:`EnvHost`'s own coroutines
    to their end in the calling thread instead (same code, same replies).
    """

    def __init__(self, env: type[EnvironmentBase] | str, threads: int = 0) -> None:
        self.host = EnvHost(env, threads)
        if not self.host.inline:
            raise TypeError(f"{self.host.env_class.name} can block or suspend: host it on an EnvHost")
        self.lock = threading.Lock()
        """Ray's calls and the channel's thread take turns: one call at a time, as on one thread."""
        self.channel: ThreadChannelServer | None = None

    def call_blob(self, blob: bytes) -> bytes:
        calls: list[Call] = pickle.loads(blob)
        with self.lock:
            return encode([_run_now(self.host._dispatch(method, key, args)) for method, key, args in calls])

    def info(self, channel: bool = False) -> dict[str, Any]:
        """:meth:`EnvHost.info`; the channel's batches are answered on a thread of its own."""
        with self.lock:
            info = _run_now(self.host.info())
            if channel:
                if self.channel is None:
                    self.channel = ThreadChannelServer(self.call_blob, _channel_host(info))
                info["channel"] = self.channel.address
            return info

    def stop(self, exit_within: float | None = None) -> int:
        """:meth:`EnvHost.stop`."""
        with self.lock:
            return _run_now(self.host.stop(exit_within))


def host_class(env_class: type[EnvironmentBase]) -> type[EnvHost] | type[InlineEnvHost]:
    """The actor class that hosts ``env_class``: :class:`InlineEnvHost` for an environment whose
    calls never block nor suspend, :class:`EnvHost` (an async actor) for the others."""
    return InlineEnvHost if is_inline(env_class) else EnvHost


def is_inline(env_class: type[EnvironmentBase]) -> bool:
    """Whether ``env_class`` is synchronous and non-blocking: its calls finish without suspending."""
    return not issubclass(env_class, AsyncEnvironment) and not env_class.blocking


def encode(value: Any) -> bytes:
    """Pickle a batch of calls or replies into one ``bytes``: Ray then ships a single bytes object
    instead of walking every item with its own serializer, which costs far more per call.

    Plain pickle when what it names by reference can be imported on the other side, which holds
    for plain data and omnienv's own types; else Ray's cloudpickle, which pickles those by value
    as Ray would: what lives in ``__main__``, a local class or function, a module registered with
    ``register_pickle_by_value``. cloudpickle visits every object in Python, so on a batch of
    steps the plain pickler is several times faster.
    """
    from ray import cloudpickle

    if not cloudpickle.list_registry_pickle_by_value():
        try:
            data = pickle.dumps(value, protocol=5)
        except Exception:  # something pickle cannot name: cloudpickle sends it by value
            pass
        else:
            if b"__main__" not in data:  # a false alarm (a string that says so) only costs time
                return data
    return bytes(cloudpickle.dumps(value, protocol=5))


async def _quietly(closing: Coroutine[Any, Any, Any]) -> None:
    try:
        await closing
    except Exception:  # one environment that fails to close keeps no other from closing
        pass


def _run_now(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that cannot suspend to its end, right here."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("an inline environment's call suspended: its class should say blocking = True")


def _channel_host(info: dict[str, Any]) -> str:
    """The address the channel listens on: the Ray node's (loopback for a node pinned there, and
    outside Ray)."""
    return str(info.get("node_ip") or "127.0.0.1")


def _ray_node() -> dict[str, str]:
    """The Ray node this process hosts an actor on; nothing when it is no Ray actor (in-process
    use never imports Ray for this)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return {}
    context = ray.get_runtime_context()
    if context.get_actor_id() is None:
        return {}
    return {"node_id": context.get_node_id(), "node_ip": ray.util.get_node_ip_address()}
