"""Answering a WebSocket frame where it arrives, when nothing else is waiting.

uvicorn hands each frame to the app through a queue: it pauses reading, wakes the app's task on
the next turn of the event loop, resumes reading, and the app sends its reply back through an
``await send(...)`` that checks the connection's state again. For a fast environment's step
(:attr:`Handler.inline`) that round trip costs more CPU than the step itself.

:class:`AnsweringProtocol` is uvicorn's WebSocket protocol with one shortcut: once the ``/ws``
endpoint has opened its session and waits for the next frame (:meth:`AnsweringProtocol.answer_with`),
a text frame that arrives while nothing is queued, the app is waiting and the socket is writable
is run through :meth:`Handler.frame` right inside ``data_received``, and a reply that is ready at
once is written there. A request the app must await (or a close) is handed to the app already
parsed; a frame behind others, or one that arrives while the socket is full, goes to the app as
before. So frames are still answered strictly in order, a client that stops reading is still
stopped by backpressure, and :meth:`Handler.frame` stays the one path of every frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState

from omnienv.server.lean import Gate, Inbox
from omnienv.server.websocket import PARSED

if TYPE_CHECKING:
    from websockets.frames import Frame

    from omnienv.server.handler import Handler
    from omnienv.server.sessions import Session

__all__ = ["AnsweringProtocol"]


class AnsweringProtocol(WebSocketsSansIOProtocol):
    handler: Handler | None = None
    session: Session | None = None

    def answer_with(self, handler: Handler | None, session: Session | None = None) -> bool:
        """Answer frames of ``session`` in ``data_received`` from now on (None: stop); False when
        this connection cannot (uvicorn's queue or flow control were not swapped for lean ones)."""
        queue: Any = self.queue
        writable: Any = self.writable
        if handler is not None and not (type(queue) is Inbox and type(writable) is Gate):
            return False
        self.handler, self.session = handler, session
        return True

    def handle_text(self, event: Frame) -> None:
        handler = self.handler
        queue: Any = self.queue  # an Inbox whenever handler is set
        if handler is None or not event.fin or self.close_sent or not queue.waiting() or not self.writable.is_set():
            super().handle_text(event)
            return
        try:
            text = cast(bytes, event.data).decode()
        except UnicodeDecodeError:
            super().handle_text(event)  # uvicorn closes with 1007
            return
        reply = handler.frame(self.session, text)  # type: ignore[arg-type]
        if type(reply) is not bytes:
            # a request the app must await, or a close: handed over parsed, in order
            queue.put_nowait({"type": "websocket.receive", PARSED: reply})
            if not self.read_paused:
                self.read_paused = True
                self.transport.pause_reading()
            return
        try:
            self.conn.send_text(reply)
        except InvalidState:  # the peer is closing: nobody left to answer
            return
        self.transport.write(b"".join(self.conn.data_to_send()))
