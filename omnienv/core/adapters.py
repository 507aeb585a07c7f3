"""One face for both twins: :func:`as_async` for servers and async loops, :func:`as_sync` for
frameworks that call environments from plain synchronous code (Gymnasium, GEM, SkyRL Gym, TRL).

Each is chosen once per environment, so callers never branch per call, and these are the only
places where an environment of one kind is driven from code of the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Protocol, TypeVar, cast

from omnienv.core.env import AsyncEnvironment, Environment, EnvironmentBase
from omnienv.core.errors import InvalidTypeError
from omnienv.core.tasks import Task
from omnienv.core.threads import shared_blocking_threads
from omnienv.core.types import Observation, State, StepResult, ToolCall

__all__ = ["AsyncEnv", "SyncEnv", "ToolInfo", "as_async", "as_sync", "require_env_factory"]

T = TypeVar("T")


class ToolInfo(Protocol):
    """What callers read of a tool: a :class:`~omnienv.core.ToolSpec` in-process, a server's
    listing (:class:`~omnienv.protocol.messages.RemoteTool`) over the wire."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> dict[str, Any]: ...


class AsyncEnv(Protocol):
    """The async face every server and async loop drives; see :func:`as_async`."""

    @property
    def name(self) -> str: ...
    @property
    def tools(self) -> Mapping[str, ToolInfo]: ...

    async def reset(self, task: Task | str | None = None, seed: int | None = None) -> Observation: ...
    async def step(self, call: ToolCall) -> StepResult: ...
    async def end(self) -> StepResult: ...
    async def state(self) -> State: ...
    async def close(self) -> None: ...


class SyncEnv(Protocol):
    """The synchronous face; see :func:`as_sync`."""

    @property
    def name(self) -> str: ...
    @property
    def tools(self) -> Mapping[str, ToolInfo]: ...

    def reset(self, task: Task | str | None = None, seed: int | None = None) -> Observation: ...
    def step(self, call: ToolCall) -> StepResult: ...
    def end(self) -> StepResult: ...
    def state(self) -> State: ...
    def close(self) -> None: ...


class _SyncAsAsync:
    """An :class:`Environment` seen through the async interface, chosen once by ``as_async``.

    Blocking environments run in ``executor`` (when None, the pool shared in-process,
    :func:`~omnienv.core.threads.shared_blocking_threads`) so that one slow session never stalls
    the others; non-blocking ones run inline, which is far cheaper.
    """

    def __init__(self, env: Environment, executor: Executor | None = None) -> None:
        self.env = env
        self.executor = executor if executor is not None or not env.blocking else shared_blocking_threads()
        self.name = env.name
        self.tools = env.tools

    def __repr__(self) -> str:
        return f"as_async({self.env!r})"

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if not self.env.blocking:
            return fn(*args)
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def reset(self, task: Task | str | None = None, seed: int | None = None) -> Observation:
        return await self._call(self.env.reset, task, seed)

    async def step(self, call: ToolCall) -> StepResult:
        return await self._call(self.env.step, call)

    async def end(self) -> StepResult:
        return await self._call(self.env.end)

    async def state(self) -> State:
        return self.env.state()

    async def close(self) -> None:
        await self._call(self.env.close)


class _AsyncAsSync:
    """An async environment driven from synchronous code, on an event loop of its own.

    The loop runs in the calling thread; when that thread already runs a loop (a notebook, an
    async trainer calling a sync API), each call runs the private loop on a helper thread
    instead, so the caller's loop is never re-entered. One call at a time: not thread-safe.
    """

    def __init__(self, env: AsyncEnv) -> None:
        self.env = env
        self.name = env.name
        self.tools = env.tools
        self._loop: asyncio.AbstractEventLoop | None = None
        self._helper: ThreadPoolExecutor | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"as_sync({self.env!r})"

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run one coroutine of the environment's to completion."""
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._loop.run_until_complete(coroutine)
        if self._helper is None:
            self._helper = ThreadPoolExecutor(1, thread_name_prefix="omnienv-as-sync")
        return self._helper.submit(self._loop.run_until_complete, coroutine).result()

    def reset(self, task: Task | str | None = None, seed: int | None = None) -> Observation:
        return self.run(self.env.reset(task, seed))

    def step(self, call: ToolCall) -> StepResult:
        return self.run(self.env.step(call))

    def end(self) -> StepResult:
        return self.run(self.env.end())

    def state(self) -> State:
        return self.run(self.env.state())

    def close(self) -> None:
        """Close the environment, then the private loop; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        try:
            self.run(self.env.close())
        finally:
            if self._loop is not None:
                self._loop.close()
                self._loop = None
            if self._helper is not None:
                self._helper.shutdown(wait=False)
                self._helper = None


def as_async(env: EnvironmentBase, executor: Executor | None = None) -> AsyncEnv:
    """One async face for both twins, so servers and async loops never branch per call."""
    if isinstance(env, AsyncEnvironment):
        return env
    if isinstance(env, Environment):
        return _SyncAsAsync(env, executor)
    raise _not_an_environment("as_async", "an Environment or AsyncEnvironment", env)


def as_sync(env: EnvironmentBase | AsyncEnv) -> SyncEnv:
    """One synchronous face for both twins (and any :class:`AsyncEnv`, e.g. an async client):
    a sync environment is returned as it is, an async one runs on a private event loop."""
    if isinstance(env, Environment):
        return env
    if isinstance(env, _SyncAsAsync):
        return env.env
    if isinstance(env, AsyncEnvironment) or (not isinstance(env, type) and callable(getattr(env, "step", None))):
        return _AsyncAsSync(cast(AsyncEnv, env))
    raise _not_an_environment("as_sync", "an Environment, an AsyncEnvironment or an async env", env)


def _not_an_environment(owner: str, expected: str, env: object) -> InvalidTypeError:
    """The error of ``as_async``/``as_sync`` given what is not an environment, naming the fix."""
    if isinstance(env, type):
        fix = f": pass an instance, {owner}({env.__name__}())"
    elif isinstance(env, str):
        fix = f": pass an instance, {owner}(omnienv.load_environment({env!r})())"
    else:
        fix = ""
    return InvalidTypeError(f"expected {expected}, got {type(env).__name__} {env!r:.80}{fix}")


def require_env_factory(make: object, owner: str, name: str = "make_env") -> None:
    """Refuse, naming the fix, what cannot make the environments ``owner`` plays: a class (whose
    instances need ``as_async``), a name or an instance (no factory at all)."""
    if isinstance(make, type) and issubclass(make, EnvironmentBase):
        raise InvalidTypeError(
            f"{owner}: {name} must make an AsyncEnv, got the class {make.__name__}: "
            f"pass lambda: omnienv.as_async({make.__name__}())"
        )
    if not callable(make):
        raise InvalidTypeError(
            f"{owner}: {name} must be a function that makes an AsyncEnv, got {type(make).__name__} {make!r:.80}: "
            "pass lambda: omnienv.as_async(env_class()), or lambda: omnienv.client.connect(url)"
        )
