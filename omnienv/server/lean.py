"""Slimming uvicorn's state for an idle WebSocket, once its handshake is done.

An idle session should cost little more than its environment, but uvicorn's ``websockets``
protocol keeps, per connection and for the connection's whole life: the upgrade request (its
parsed headers stay referenced from the parser generator's frame, about 2 KB), the 101
response, an :class:`asyncio.Queue` for incoming messages and an :class:`asyncio.Event` for
flow control (five deques, about 3.8 KB together), and the scope's nested dicts. With ten
thousand idle sessions that is some 60 MB. :func:`forget_handshake` drops what nobody reads
after the accept and swaps the queue and the event for :class:`Inbox` and :class:`Gate`,
which offer the few methods that protocol calls and allocate only while someone waits.

Everything here checks the protocol's class name and its attributes first: for any other
server (or a uvicorn that changed) it does nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["Gate", "Inbox", "forget_handshake"]

PROTOCOL = "WebSocketsSansIOProtocol"
UNREAD_SCOPE_KEYS = ("asgi", "extensions", "state", "subprotocols")
"""Scope entries nobody reads once the socket is accepted (uvicorn's logs read client and path)."""


def forget_handshake(send: Any) -> None:
    """Let uvicorn's WebSocket connection drop what it keeps of the handshake after accepting.

    ``send`` is the connection's own ASGI ``send``; call this right after the accept was sent.
    """
    connection: Any = getattr(send, "__self__", None)
    if PROTOCOL not in _class_names(connection) or not getattr(connection, "handshake_complete", False):
        return
    request = getattr(connection, "request", None)
    headers = getattr(request, "headers", None)
    if headers is not None and callable(getattr(headers, "clear", None)):
        headers.clear()  # the parser generator's frame still holds the request itself
    connection.request = connection.response = None
    scope = getattr(connection, "scope", None)
    if isinstance(scope, dict):
        for key in UNREAD_SCOPE_KEYS:
            scope.pop(key, None)
    queue = getattr(connection, "queue", None)
    if type(queue) is asyncio.Queue:
        inbox = Inbox()
        while not queue.empty():
            inbox.put_nowait(queue.get_nowait())
        connection.queue = inbox
    writable = getattr(connection, "writable", None)
    if type(writable) is asyncio.Event:
        gate = Gate()
        if not writable.is_set():
            gate.clear()
        connection.writable = gate


def _class_names(instance: object) -> set[str]:
    return {cls.__name__ for cls in type(instance).__mro__}


class Inbox:
    """What uvicorn's WebSocket protocol uses of an :class:`asyncio.Queue`, without its deques.

    Unbounded, first in first out, one reader at a time (ASGI's ``receive``). An item stays in
    the list until the reader takes it, so a reader cancelled while waking up loses nothing, as
    with ``asyncio.Queue``.
    """

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def get(self) -> Any:
        items = self._items
        while not items:
            waiter = self._waiter
            if waiter is None or waiter.done():
                waiter = self._waiter = asyncio.get_running_loop().create_future()
            await waiter
        return items.pop(0)

    def empty(self) -> bool:
        return not self._items

    def waiting(self) -> bool:
        """The reader waits for an item and none is queued: it has handled every earlier one."""
        waiter = self._waiter
        return waiter is not None and not waiter.done() and not self._items

    def qsize(self) -> int:
        return len(self._items)


class Gate:
    """What uvicorn's WebSocket protocol uses of an :class:`asyncio.Event`: open unless the
    transport asked to pause writing; ``wait()`` returns at once while it is open."""

    __slots__ = ("_open", "_waiters")

    def __init__(self) -> None:
        self._open = True
        self._waiters: list[asyncio.Future[None]] | None = None
        """Senders waiting for the gate to open (several tasks may send); a list only while paused."""

    def is_set(self) -> bool:
        return self._open

    def set(self) -> None:
        self._open = True
        waiters, self._waiters = self._waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(None)

    def clear(self) -> None:
        self._open = False

    async def wait(self) -> bool:
        while not self._open:
            waiter = asyncio.get_running_loop().create_future()
            if self._waiters is None:
                self._waiters = []
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if self._waiters is not None and waiter in self._waiters:
                    self._waiters.remove(waiter)
        return True
