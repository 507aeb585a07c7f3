"""Coalescing: the calls a front server makes to one actor in one event-loop turn go as one.

A Ray actor call costs the caller several hundred microseconds of CPU whatever it carries, far
more than a Wordle step. Under load many sessions on the same actor step in the same loop turn,
so each actor gets one ``call_blob`` per batch (the calls pickled into one ``bytes``, which Ray
ships far more cheaply than a list of objects) and its reply is handed back call by call: the
cost per step falls with concurrency, and a lone session waits no longer than before (a batch
leaves at the end of the current turn, or when an earlier one returns; never on a timer).
A batch goes over the actor's direct connection when it has one (:mod:`omnienv.ray.channel`),
else as a Ray call.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
from typing import Any

from omnienv.ray.channel import ChannelAddress, ChannelClient, ChannelUnreachable
from omnienv.ray.host import Reply, encode

logger = logging.getLogger("omnienv.ray")

__all__ = ["CallBatcher"]

_Pending = tuple[str, str, tuple[Any, ...], "asyncio.Future[Reply]"]


class CallBatcher:
    """One actor's outgoing calls on one event loop.

    While ``window`` batches are on their way, new calls wait for one of them to return and then
    leave together: an idle actor gets a call at the end of the current loop turn, a busy one
    gets ever larger batches, so the caller's cost per call shrinks as the load grows.
    """

    __slots__ = ("actor", "channel", "in_flight", "loop", "pending", "scheduled", "tasks", "window")

    def __init__(
        self, actor: Any, loop: asyncio.AbstractEventLoop, window: int = 1, channel: ChannelAddress | None = None
    ) -> None:
        self.actor = actor
        self.loop = loop
        self.channel = ChannelClient(channel, loop) if channel is not None else None
        self.window = window
        self.in_flight = 0
        self.scheduled = False
        self.pending: list[_Pending] = []
        self.tasks: set[asyncio.Task[None]] = set()

    def call(self, method: str, key: str, args: tuple[Any, ...]) -> asyncio.Future[Reply]:
        """The future reply of ``method(key, *args)`` on the actor; Ray's errors are set on it."""
        future: asyncio.Future[Reply] = self.loop.create_future()
        self.pending.append((method, key, args, future))
        self._schedule()
        return future

    def _schedule(self) -> None:
        if self.pending and not self.scheduled and self.in_flight < self.window:
            self.scheduled = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self.scheduled = False
        batch, self.pending = self.pending, []
        if not batch:
            return
        try:
            blob = encode([(method, key, args) for method, key, args, _ in batch])
        except Exception as exc:
            _fail(batch, exc)
            return
        self.in_flight += 1
        task = self.loop.create_task(self._deliver(blob, batch))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _send(self, blob: bytes) -> bytes:
        channel = self.channel
        if channel is not None:
            try:
                return await channel.request(blob)
            except ChannelUnreachable as exc:  # nothing was sent: Ray carries it, and the rest
                logger.warning("%s; calling the actor through Ray instead", exc)
                self.channel = None
        return await self.actor.call_blob.remote(blob)

    def close(self) -> None:
        """Close the direct connection (from any thread); calls in flight fail as lost."""
        if self.channel is not None:
            self.channel.close()

    async def _deliver(self, blob: bytes, batch: list[_Pending]) -> None:
        try:
            replies = pickle.loads(await self._send(blob))
            if isinstance(replies, Exception):  # the actor could not answer this batch at all
                raise replies
        except Exception as exc:  # the actor died, or Ray failed: every call of the batch says so
            _fail(batch, exc)
            return
        finally:
            self.in_flight -= 1
            self._schedule()
        for (*_, future), reply in zip(batch, replies, strict=True):
            if not future.done():  # its caller may have given up (deadline, disconnect)
                future.set_result(reply)


def _fail(batch: list[_Pending], exc: BaseException) -> None:
    for *_, future in batch:
        if not future.done():
            future.set_exception(exc)
