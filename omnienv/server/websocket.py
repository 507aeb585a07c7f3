"""``WS /ws``: OpenEnv's session protocol, one session per connection, as a bare ASGI app.

Byte-compatible with OpenEnv 0.10.0: the server accepts the upgrade first, then opens the
session; a refusal (full server, unknown ``?session_id=``) is one error frame and a 1000 close.
Frames are answered strictly in order. The loop touches no Starlette object on the hot path: a
frame is decoded once, run, and its reply encoded once. A fast environment's steps and resets
mostly never reach this loop: uvicorn's protocol answers them as they arrive
(:mod:`omnienv.server.answering`), and hands over the rest already parsed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from omnienv.core.errors import OmniEnvError
from omnienv.server.handler import Handler, error_frame
from omnienv.server.lean import forget_handshake
from omnienv.server.sessions import OPENENV, SessionManager
from omnienv.server.workers import query_session_id

__all__ = ["WebSocketEndpoint"]

PARSED = "omnienv.parsed"
"""Key of a ``websocket.receive`` message whose frame :class:`~omnienv.server.answering.AnsweringProtocol`
ran through :meth:`Handler.frame` already: the request, or None for a close."""

logger = logging.getLogger("omnienv.server")
Scope = dict[str, Any]


class WebSocketEndpoint:
    def __init__(self, manager: SessionManager, handler: Handler) -> None:
        self.manager = manager
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        forget_handshake(send)
        session_id = query_session_id(scope)
        scope["headers"] = ()  # read by nobody after the handshake; ~1 KB an idle session need not keep
        try:
            if session_id is not None:
                session = self.manager.attach(session_id, OPENENV)
            else:  # a socket of its own is a session like POST /sessions: never an agent's to open
                self.handler.refuse_agents("opening and closing sessions")
                session = await self.manager.open(owned=True, family=OPENENV)
                session.attached = True  # nobody else may attach to a socket's own session
        except OmniEnvError as exc:
            try:
                await send({"type": "websocket.send", "text": error_frame(exc).decode()})
                await send({"type": "websocket.close", "code": 1000})
            except OSError:  # the client already left
                pass
            return
        session.expire = _Expire(send)
        # The frame loop is written out here, not in a helper: each open socket keeps its coroutine
        # frames for the session's lifetime, and one frame is smaller than two. For the same reason
        # it holds no bound methods of its own between frames.
        handler = self.handler
        connection: Any = getattr(send, "__self__", None)
        answering = hasattr(connection, "answer_with") and connection.answer_with(handler, session)
        try:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return  # websocket.disconnect: the client left or the socket died
                if PARSED in message:  # the protocol ran handler.frame already (omnienv.server.answering)
                    reply = message[PARSED]
                else:
                    raw = message.get("text")
                    reply = handler.frame(session, raw if raw is not None else (message.get("bytes") or b""))
                if reply is not None and not isinstance(reply, bytes):
                    reply = await handler.frame_later(session, reply)
                try:
                    if reply is None:  # {"type": "close"}: no reply, then 1000; an attached session stays
                        if session.owned:
                            await self.manager.close(session)
                        await send({"type": "websocket.close", "code": 1000})
                        return
                    await send({"type": "websocket.send", "text": reply.decode()})
                except OSError:  # uvicorn's ClientDisconnected: nobody left to answer
                    return
                # An idle session waits in receive() above: let it hold no request or reply meanwhile.
                message = raw = reply = None
        finally:
            if answering:
                connection.answer_with(None)
            await self.manager.detach(session)


class _Expire:
    """Closes the socket from the server's side (the session was reaped): a session's
    ``expire``, one slot where a ``partial`` would keep three objects per idle session."""

    __slots__ = ("send",)

    def __init__(self, send: Any) -> None:
        self.send = send

    def __call__(self, reason: str) -> None:
        task = asyncio.get_running_loop().create_task(_close(self.send, reason))
        _pending.add(task)
        task.add_done_callback(_pending.discard)


async def _close(send: Any, reason: str) -> None:
    try:
        await send({"type": "websocket.close", "code": 1001, "reason": reason[:120]})
    except Exception:  # already closed from the other side
        pass


_pending: set[asyncio.Task[None]] = set()
