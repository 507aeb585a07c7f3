"""Clients over ``/ws``: one session per connection, async and sync twins.

:class:`AsyncWebSocketClient` has the :class:`~omnienv.core.AsyncEnv` face, so the rollout loop
and ``acheck_env`` drive a remote environment exactly as an in-process one. ``close()`` ends the
session; a later ``reset()`` opens a new one. A dead connection surfaces as
:class:`~omnienv.core.SessionLostError` at once (closed socket) or within the ping timeout
(half-open socket), never as a hang.
"""

from __future__ import annotations

import asyncio
from typing import Any

from websockets.asyncio.client import ClientConnection as AsyncConnection
from websockets.asyncio.client import connect as aconnect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import ClientConnection as SyncConnection
from websockets.sync.client import connect as sconnect

from omnienv.client._base import CLOSE, GET_STATE, LIST_TOOLS, AsyncClient, BlockingClient, ClientBase
from omnienv.core.errors import SessionLostError, UsageError
from omnienv.core.tasks import Task
from omnienv.core.threads import to_blocking_thread
from omnienv.core.types import Observation, State, StepResult, ToolCall
from omnienv.protocol.messages import end_request

__all__ = ["AsyncWebSocketClient", "WebSocketClient", "connect"]

_CONNECT_ERRORS = (OSError, TimeoutError, InvalidHandshake, InvalidURI)


class _WebSocketBase(ClientBase):
    """Connection options and the constant frames both WebSocket twins send."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float | None = 600.0,
        connect_timeout: float = 10.0,
        ping_interval: float | None = 20.0,
        ping_timeout: float | None = 20.0,
    ) -> None:
        super().__init__(url, timeout=timeout, connect_timeout=connect_timeout)
        self._connect_options: dict[str, Any] = {
            "open_timeout": connect_timeout,
            "ping_interval": ping_interval,
            "ping_timeout": ping_timeout,
            "close_timeout": 2.0,
            "max_size": None,  # replies are bounded by the server
            "compression": None,  # small JSON frames: compressing costs more than it saves
            "proxy": None,
        }
        self._list_tools = self._encode(LIST_TOOLS)
        self._get_state = self._encode(GET_STATE)
        self._end = self._encode(end_request())
        self._close = self._encode(CLOSE)

    def _cannot_connect(self, exc: BaseException) -> SessionLostError:
        return SessionLostError(f"cannot connect to {self.ws_url}: {type(exc).__name__}: {exc}")


class AsyncWebSocketClient(_WebSocketBase, AsyncClient):
    """An environment served at ``url``, over one WebSocket session."""

    _ws: AsyncConnection | None = None
    _busy = False

    async def open(self) -> None:
        """Open the session (no-op when open) and read the tool list."""
        if self._ws is not None:
            return
        try:
            self._ws = await aconnect(self.ws_url, **self._connect_options)
        except _CONNECT_ERRORS as exc:
            raise self._cannot_connect(exc) from exc
        try:
            self._on_tools(await self._request(self._list_tools))
        except BaseException:
            await self.close()
            raise

    async def reset(
        self, task: Task | str | None = None, seed: int | None = None, split: str | None = None
    ) -> Observation:
        await self.open()
        return self._on_reset(await self._request(self._encode(self._reset_request(task, seed, split))))

    async def step(self, call: ToolCall) -> StepResult:
        if self._ws is None:
            raise self._not_connected()
        return self._on_step(await self._request(self._encode(self._step_request(call))))

    async def end(self) -> StepResult:
        """End the episode now and have the server score it (the trainer's cut)."""
        if self._ws is None:
            raise self._not_connected()
        return self._on_step(await self._request(self._end))

    async def state(self) -> State:
        if self._ws is None:
            return State(None, 0)
        return self._on_state(await self._request(self._get_state))

    async def close(self) -> None:
        """End the session on the server; safe to call more than once.

        The goodbye is shielded: a caller cancelled mid-close (a pool shutting down) still
        frees its server session at once instead of leaving it to the idle reaper.
        """
        ws, self._ws = self._ws, None
        if ws is not None:
            await asyncio.shield(self._goodbye(ws))
        if self.container is not None:
            await to_blocking_thread(self._stop_container)

    async def _goodbye(self, ws: AsyncConnection) -> None:
        try:
            await ws.send(self._close)
        except ConnectionClosed:
            pass
        await ws.close()

    async def _request(self, frame: str) -> bytes:
        ws = self._ws
        if ws is None:
            raise self._not_connected()
        if self._busy:  # replies carry no ids: two requests in flight would swap their answers
            raise UsageError(f"{self.name}: one request at a time per client; open one client per task")
        self._busy = True
        try:
            return await self._exchange(ws, frame)
        finally:
            self._busy = False

    async def _exchange(self, ws: AsyncConnection, frame: str) -> bytes:
        try:
            await ws.send(frame)
            if self.timeout is None:
                return await ws.recv(decode=False)
            async with asyncio.timeout(self.timeout):
                return await ws.recv(decode=False)
        except ConnectionClosed as exc:
            self._ws = None
            try:  # a refusal (capacity, unknown session) is one error frame before the close
                return await ws.recv(decode=False)
            except ConnectionClosed:
                raise self._lost(exc) from exc
        except TimeoutError:
            self._ws = None
            await ws.close()
            raise self._timed_out() from None
        except asyncio.CancelledError:
            # The reply may still arrive and would answer the next request: drop the socket
            # (the server closes the session) so a later reset() starts clean.
            self._ws = None
            ws.transport.abort()  # at once: no close handshake left pending on the loop
            raise


class WebSocketClient(_WebSocketBase, BlockingClient):
    """The blocking twin of :class:`AsyncWebSocketClient` (``websockets.sync``; no event loop)."""

    _ws: SyncConnection | None = None

    def open(self) -> None:
        """Open the session (no-op when open) and read the tool list."""
        if self._ws is not None:
            return
        try:
            # Entering the context is how websockets >= 17.1 hands over a plain connection;
            # older releases return the same object from __enter__.
            self._ws = sconnect(self.ws_url, **self._connect_options).__enter__()
        except _CONNECT_ERRORS as exc:
            raise self._cannot_connect(exc) from exc
        try:
            self._on_tools(self._request(self._list_tools))
        except BaseException:
            self.close()
            raise

    def reset(self, task: Task | str | None = None, seed: int | None = None, split: str | None = None) -> Observation:
        self.open()
        return self._on_reset(self._request(self._encode(self._reset_request(task, seed, split))))

    def step(self, call: ToolCall) -> StepResult:
        if self._ws is None:
            raise self._not_connected()
        return self._on_step(self._request(self._encode(self._step_request(call))))

    def end(self) -> StepResult:
        """End the episode now and have the server score it (the trainer's cut)."""
        if self._ws is None:
            raise self._not_connected()
        return self._on_step(self._request(self._end))

    def state(self) -> State:
        if self._ws is None:
            return State(None, 0)
        return self._on_state(self._request(self._get_state))

    def close(self) -> None:
        """End the session on the server; safe to call more than once."""
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                ws.send(self._close)
            except ConnectionClosed:
                pass
            ws.close()
        self._stop_container()

    def _request(self, frame: str) -> bytes:
        ws = self._ws
        if ws is None:
            raise self._not_connected()
        try:
            ws.send(frame)
            return ws.recv(timeout=self.timeout, decode=False)
        except ConnectionClosed as exc:
            self._ws = None
            try:  # a refusal (capacity, unknown session) is one error frame before the close
                return ws.recv(timeout=0, decode=False)
            except (ConnectionClosed, TimeoutError):
                raise self._lost(exc) from exc
        except TimeoutError:
            self._ws = None
            ws.close()
            raise self._timed_out() from None
        except BaseException:  # interrupted mid-request: the late reply would desync the next one
            self._ws = None
            ws.close()
            raise


async def connect(url: str, **options: Any) -> AsyncWebSocketClient:
    """An open :class:`AsyncWebSocketClient`: the env factory for rollouts, ``lambda: connect(url)``."""
    return await AsyncWebSocketClient.connect(url, **options)
