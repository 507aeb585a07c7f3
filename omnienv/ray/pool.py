"""``EnvPool``: many environments on Ray actors, reset and stepped in batches, for trainers.

A trainer that already runs on Ray wants a vector of environments, not a server: ``reset`` and
``step`` take one item per environment and return one per environment, in order. A batch costs
one actor call per actor (not per environment), and every item answers for itself: an item's
error (a bad tool call's error observation aside, which is a normal result) is returned in its
place as the ``OmniEnvError`` it is, and the rest of the batch goes on.

An actor that dies turns its environments' items into ``WorkerLostError`` (an
``EnvironmentFailure``: mask those episodes, do not score them); their next ``reset`` places
them on the least loaded live actor. The pool starts a replacement for the dead actor at once
(:class:`HostPool`), which takes environments from the moment it answers.
"""

from __future__ import annotations

import asyncio
import functools
import pickle
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import ray
from ray.exceptions import RayActorError

from omnienv.core.env import EnvironmentBase
from omnienv.core.errors import EnvironmentFailure, OmniEnvError
from omnienv.core.tasks import Task
from omnienv.core.types import Observation, State, StepResult, ToolCall
from omnienv.ray.host import Call, Reply, encode
from omnienv.ray.placement import Host, HostPool

__all__ = ["EnvPool"]

T = TypeVar("T")
Outcome: TypeAlias = T | OmniEnvError


@dataclass(eq=False)
class _Slot:
    key: str
    host: Host


class _Batch:
    """One batch split by actor: which items go to which actor, in one call each."""

    def __init__(self, size: int) -> None:
        self.results: list[Any] = [None] * size
        self.groups: dict[int, tuple[Host, list[int], list[Call]]] = {}

    def add(self, host: Host, index: int, call: Call) -> None:
        group = self.groups.setdefault(host.index, (host, [], []))
        group[1].append(index)
        group[2].append(call)


class EnvPool:
    """``num_envs`` environments of one class spread over ``num_actors`` Ray actors.

    Ray must be running (:func:`omnienv.ray.connect`). ``actor_options`` are ``ray.remote`` actor
    options (``num_cpus``, ``memory``, ``resources``...), ``hosts`` an existing
    :class:`HostPool` to share. ``replacement_wait`` bounds how long a reset waits for a
    replacement actor when every actor is dead. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        env: type[EnvironmentBase] | str,
        num_envs: int,
        *,
        num_actors: int | None = None,
        actor_options: Mapping[str, Any] | None = None,
        hosts: HostPool | None = None,
        replacement_wait: float = 30.0,
    ) -> None:
        if num_envs < 1:
            raise ValueError("an EnvPool needs num_envs >= 1")
        self._own_hosts = hosts is None
        self.hosts = hosts if hosts is not None else HostPool(env, num_actors, options=actor_options, direct=False)
        self.env_class = self.hosts.env_class
        self.slots = [_Slot(uuid.uuid4().hex, self.hosts.place()) for _ in range(num_envs)]
        self.closed = False
        self.replacement_wait = replacement_wait

    def __len__(self) -> int:
        return len(self.slots)

    @property
    def tools(self) -> Mapping[str, Any]:
        return self.env_class.tools

    # -- the batch calls ----------------------------------------------------------------------

    def reset(
        self,
        seeds: Sequence[int | None] | None = None,
        *,
        tasks: Sequence[Task | str | None] | None = None,
        envs: Sequence[int] | None = None,
    ) -> list[Outcome[Observation]]:
        """Start an episode in each of ``envs`` (default: all), with its seed and task.

        An environment whose actor died starts over on the least loaded live actor; when every
        actor is dead, this waits up to ``replacement_wait`` seconds for a replacement."""
        if self._stranded(envs):
            self.hosts.wait_live_blocking(self.replacement_wait)
        return self._gather(self._reset_batch(seeds, tasks, envs))

    def step(
        self, calls: Sequence[ToolCall | None], *, envs: Sequence[int] | None = None
    ) -> list[Outcome[StepResult] | None]:
        """One tool call per environment of ``envs`` (default: all); None skips that one."""
        return self._gather(self._step_batch(calls, envs))

    def state(self, envs: Sequence[int] | None = None) -> list[Outcome[State]]:
        return self._gather(self._state_batch(envs))

    async def areset(
        self,
        seeds: Sequence[int | None] | None = None,
        *,
        tasks: Sequence[Task | str | None] | None = None,
        envs: Sequence[int] | None = None,
    ) -> list[Outcome[Observation]]:
        """:meth:`reset` for code running on an event loop."""
        if self._stranded(envs):
            await self.hosts.wait_live(self.replacement_wait)
        return await self._agather(self._reset_batch(seeds, tasks, envs))

    async def astep(
        self, calls: Sequence[ToolCall | None], *, envs: Sequence[int] | None = None
    ) -> list[Outcome[StepResult] | None]:
        return await self._agather(self._step_batch(calls, envs))

    async def astate(self, envs: Sequence[int] | None = None) -> list[Outcome[State]]:
        return await self._agather(self._state_batch(envs))

    def close(self) -> None:
        """Close every environment; stop the actors too when this pool started them."""
        if self.closed:
            return
        self.closed = True
        batch = _Batch(len(self.slots))
        for i, slot in enumerate(self.slots):
            if slot.host.alive:
                batch.add(slot.host, i, ("close", slot.key, ()))
            self.hosts.release(slot.host)
        try:
            self._gather(batch)
        finally:
            if self._own_hosts:
                self.hosts.shutdown()

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- building batches ---------------------------------------------------------------------

    def _stranded(self, envs: Sequence[int] | None) -> bool:
        """Whether a reset of ``envs`` would need a live actor while none is, but one is starting."""
        if not self.hosts.starting or self.hosts.live:
            return False
        indices = range(len(self.slots)) if envs is None else envs
        return any(not self.slots[int(i)].host.alive for i in indices if 0 <= int(i) < len(self.slots))

    def _indices(self, envs: Sequence[int] | None, count: int | None) -> list[int]:
        if self.closed:
            raise EnvironmentFailure("this EnvPool is closed")
        indices = list(range(len(self.slots))) if envs is None else [int(i) for i in envs]
        for i in indices:
            if not 0 <= i < len(self.slots):
                raise IndexError(f"env index {i} is out of range: this pool has {len(self.slots)} envs")
        if count is not None and count != len(indices):
            raise ValueError(f"got {count} items for {len(indices)} envs: pass one per env (or envs=...)")
        return indices

    def _reset_batch(
        self,
        seeds: Sequence[int | None] | None,
        tasks: Sequence[Task | str | None] | None,
        envs: Sequence[int] | None,
    ) -> _Batch:
        indices = self._indices(envs, None)
        for name, values in (("seeds", seeds), ("tasks", tasks)):
            if values is not None and len(values) != len(indices):
                raise ValueError(f"got {len(values)} {name} for {len(indices)} envs: pass one per env")
        batch = _Batch(len(indices))
        for n, i in enumerate(indices):
            slot = self.slots[i]
            if not slot.host.alive:  # its actor died: start over on a live one
                self.hosts.release(slot.host)
                try:
                    slot.host = self.hosts.place()
                except OmniEnvError as exc:
                    batch.results[n] = exc
                    continue
            batch.add(slot.host, n, ("reset", slot.key, (tasks[n] if tasks else None, seeds[n] if seeds else None)))
        return batch

    def _step_batch(self, calls: Sequence[ToolCall | None], envs: Sequence[int] | None) -> _Batch:
        indices = self._indices(envs, len(calls))
        batch = _Batch(len(indices))
        for n, (i, call) in enumerate(zip(indices, calls, strict=True)):
            if call is None:
                continue
            if not isinstance(call, ToolCall):
                raise TypeError(f"step() takes ToolCall items (or None), got {type(call).__name__} at {n}")
            slot = self.slots[i]
            if not slot.host.alive:
                batch.results[n] = self.hosts.lost(slot.host, slot.host.death)
                continue
            batch.add(slot.host, n, ("step", slot.key, (call,)))
        return batch

    def _state_batch(self, envs: Sequence[int] | None) -> _Batch:
        indices = self._indices(envs, None)
        batch = _Batch(len(indices))
        for n, i in enumerate(indices):
            slot = self.slots[i]
            if not slot.host.alive:
                batch.results[n] = self.hosts.lost(slot.host, slot.host.death)
                continue
            batch.add(slot.host, n, ("state", slot.key, ()))
        return batch

    # -- running them -------------------------------------------------------------------------

    def _gather(self, batch: _Batch) -> list[Any]:
        """Send every actor its share of ``batch`` (one call each, all in flight together), then
        collect the replies in order."""
        calls = [
            (host, indices, host.actor.call_blob.remote(encode(items)))
            for host, indices, items in batch.groups.values()
        ]
        for host, indices, ref in calls:
            self._fill(batch, host, indices, functools.partial(ray.get, ref))
        return batch.results

    async def _agather(self, batch: _Batch) -> list[Any]:
        groups = list(batch.groups.values())
        refs = [host.actor.call_blob.remote(encode(items)) for host, _, items in groups]
        replies = await asyncio.gather(*refs, return_exceptions=True)
        for (host, indices, _), reply in zip(groups, replies, strict=True):
            self._fill(batch, host, indices, functools.partial(_raise_or, reply))
        return batch.results

    def _fill(self, batch: _Batch, host: Host, indices: list[int], fetch: Callable[[], Any]) -> None:
        """Put one actor's replies (``fetch()`` gives its pickled answer) in their items' places."""
        try:
            replies: list[Reply] = pickle.loads(fetch())
        except RayActorError as exc:
            error = self.hosts.lost(host, exc)
            for n in indices:
                batch.results[n] = error
            return
        for n, (_, value) in zip(indices, replies, strict=True):
            batch.results[n] = value  # the result, or the item's own error


def _raise_or(value: Any) -> Any:
    if isinstance(value, BaseException):
        raise value
    return value
