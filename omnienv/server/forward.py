"""A worker's front door on a ``--workers N`` server: serve what it owns, forward the rest.

:class:`WorkerRouter` wraps each worker's app. A request naming a session another worker owns
(:func:`~omnienv.server.workers.session_name`, :meth:`~omnienv.server.workers.WorkerPlace.owner`)
goes whole to that worker's private Unix socket: HTTP with its method, path, headers (cookies
included) and a streamed body, its reply streamed back (SSE included); a WebSocket attaching to
an HTTP-made session (``/ws?session_id=``) is proxied frame by frame, both ways, until either
side closes. Everything else (new sessions, discovery, stateless calls) is served where it
landed. A server of one process has no router: nothing here is on its path.

Forwarded requests carry :data:`~omnienv.server.workers.FORWARDED_HEADER` with the server's
random token, and are honoured as such only on the Unix socket, so a request is forwarded at
most once and no client can make a worker serve a session it does not own. Every reply carries
the serving worker's index (:data:`~omnienv.server.workers.WORKER_HEADER`), and a forwarded
one also the forwarding worker's (:data:`~omnienv.server.workers.VIA_HEADER`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from omnienv.core.errors import WorkerLostError
from omnienv.protocol.codec import encode
from omnienv.protocol.codes import error_data
from omnienv.server.origins import refuse
from omnienv.server.relay import HOP_BY_HOP, Relay, RelayError
from omnienv.server.workers import (
    FORWARDED_HEADER,
    VIA_HEADER,
    WORKER_HEADER,
    WorkerPlace,
    nemo_gym_cookie,
    rpc_session_name,
    session_name,
)

__all__ = ["WorkerRouter"]

logger = logging.getLogger("omnienv.server")
Scope = dict[str, Any]
Message = dict[str, Any]
_NOT_FORWARDED = HOP_BY_HOP | {b"content-length", b"expect", FORWARDED_HEADER}
"""Headers the relay makes again (framing), or that a client may not set (the forwarding mark)."""
_MCP_SESSION = b"mcp-session-id"


class WorkerRouter:
    """``app`` as one worker of ``place.count``; ``token`` is the server's forwarding secret;
    ``everyone_up()`` tells whether every worker has started (until then ``/health`` says
    ``starting``, with a 503: sessions opened meanwhile would all land on the early workers)."""

    def __init__(
        self, app: Any, place: WorkerPlace, token: str, everyone_up: Callable[[], bool] = lambda: True
    ) -> None:
        self.app = app
        self.everyone_up = everyone_up
        self.up = False
        self.state = app.state  # uvicorn_config reads the app's ServerConfig and Origin guard here
        self.place = place
        self.token = token.encode()
        self.worker = str(place.index).encode()
        self.limit: int = app.state.manager.config.max_message_bytes
        self.cookie = nemo_gym_cookie(app.state.manager.env_class.name)
        self._relays: dict[int, Relay] = {}

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self.app(scope, receive, self._closing(send))
            return
        if not self.up and scope["path"] == "/health":
            self.up = self.everyone_up()  # once up, for good: the server stops when a worker dies
            if not self.up:
                if not await self._refused(scope, receive, send):
                    await self._starting(send)
                return
        if not self._forwarded(scope):
            name, in_body = session_name(scope, self.cookie)
            if in_body:
                body, more = await _read_up_to(receive, self.limit + 1)
                receive = _replay(body, more, receive)
                name = rpc_session_name(body) if len(body) <= self.limit else None
            if name is not None and (owner := self.place.owner(name)) != self.place.index:
                if not await self._refused(scope, receive, send):  # a refusal is made here, not carried
                    forward = self._forward_http if kind == "http" else self._forward_websocket
                    await forward(scope, receive, send, owner)
                return
        await self._serve(scope, receive, send)

    def _forwarded(self, scope: Scope) -> bool:
        """Whether a sibling forwarded this request: it came on the Unix socket with the token."""
        server = scope.get("server")
        if server is None or server[1] is not None:  # TCP: a client's, whatever its headers say
            return False
        token = next((value for key, value in scope["headers"] if key == FORWARDED_HEADER), b"")
        return hmac.compare_digest(token, self.token)

    async def _refused(self, scope: Scope, receive: Any, send: Any) -> bool:
        """The app's Host and Origin checks, for what the router answers or forwards itself."""
        guard = getattr(self.app, "guard", None)
        if guard is None or (refused := guard.refusal(scope)) is None:
            return False
        await refuse(scope, receive, _naming(send, self.worker), refused)
        return True

    async def _starting(self, send: Any) -> None:
        body = encode({"status": "starting", "worker": self.place.index, "workers": self.place.count})
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 503, "headers": [*headers, (WORKER_HEADER, self.worker)]})
        await send({"type": "http.response.body", "body": body})

    # -- served here --------------------------------------------------------------------------

    async def _serve(self, scope: Scope, receive: Any, send: Any) -> None:
        """Run the app, naming this worker on the reply; on ``/mcp``, the SDK's ids are swapped
        for aliases this worker owns on the way out, and back on the way in."""
        place, worker = self.place, self.worker
        mcp = scope["path"] == "/mcp"
        if mcp:
            scope = dict(scope)
            scope["headers"] = [
                (key, place.unalias(value.decode("latin-1")).encode("latin-1") if key == _MCP_SESSION else value)
                for key, value in scope["headers"]
            ]

        async def named(message: Message) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):
                headers = list(message.get("headers") or ())
                if mcp:
                    headers = [
                        (key, place.alias(value.decode("latin-1")).encode("latin-1") if key == _MCP_SESSION else value)
                        for key, value in headers
                    ]
                message = {**message, "headers": [*headers, (WORKER_HEADER, worker)]}
            await send(message)

        await self.app(scope, receive, named)

    # -- HTTP to the owner ----------------------------------------------------------------------

    async def _forward_http(self, scope: Scope, receive: Any, send: Any, owner: int) -> None:
        target = scope.get("raw_path") or quote(scope["path"]).encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        lines = [b"%s %s HTTP/1.1" % (scope["method"].encode("latin-1"), target)]
        lines += [b"%s: %s" % (k, v) for k, v in scope["headers"] if k not in _NOT_FORWARDED]
        lines.append(b"%s: %s\r\n" % (FORWARDED_HEADER, self.token))
        body, more = await _read_up_to(receive, self.limit + 1)

        async def rest() -> bytes | None:
            message = await receive()
            if message["type"] != "http.request":
                raise OSError("the client left before its request body was complete")
            chunk: bytes = message.get("body", b"")
            return chunk if chunk or message.get("more_body", False) else None

        relay = self._relays.get(owner)
        if relay is None:
            relay = self._relays[owner] = Relay(self.place.socket_path(owner))
        try:
            await relay.forward(
                b"\r\n".join(lines),
                body,
                rest if more else None,
                scope["method"],
                send,
                lambda: _disconnected(receive),
                [(VIA_HEADER, self.worker)],
            )
        except RelayError as exc:
            await _lost(_naming(send, self.worker), owner, exc)
        except (OSError, asyncio.IncompleteReadError) as exc:  # the owner or the client left mid-reply
            logger.info("forwarding %s %s to worker %d stopped: %s", scope["method"], scope["path"], owner, exc)

    # -- WebSocket to the owner -----------------------------------------------------------------

    async def _forward_websocket(self, scope: Scope, receive: Any, send: Any, owner: int) -> None:
        """Proxy a WebSocket to the owner: its handshake first (its refusal is the client's), then
        frames both ways; whichever side closes first closes the other with its code."""
        from websockets.asyncio.client import unix_connect
        from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

        if (await receive())["type"] != "websocket.connect":
            return
        host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "localhost")
        target = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        keep = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"] if k in _WS_KEPT]
        keep.append((FORWARDED_HEADER.decode(), self.token.decode()))
        try:
            upstream = await unix_connect(
                self.place.socket_path(owner),
                f"ws://{host}{target}",
                additional_headers=keep,
                user_agent_header=None,
                compression=None,
                max_size=None,
                ping_interval=None,
                open_timeout=30,
            )
        except InvalidStatus as exc:  # the owner answered and refused: not a lost worker
            await self._denied(scope, send, exc)
            return
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            await send({"type": "websocket.accept", "headers": [(WORKER_HEADER, self.worker)]})
            await send({"type": "websocket.send", "text": _lost_body(owner, exc).decode()})
            await send({"type": "websocket.close", "code": 1011})
            return
        served_by = (upstream.response.headers.get(WORKER_HEADER.decode()) if upstream.response else None) or ""
        await send(
            {"type": "websocket.accept", "headers": [(WORKER_HEADER, served_by.encode()), (VIA_HEADER, self.worker)]}
        )

        async def down() -> None:
            with contextlib.suppress(ConnectionClosed):
                async for frame in upstream:
                    key = "text" if isinstance(frame, str) else "bytes"
                    await send({"type": "websocket.send", key: frame})
            code = upstream.close_code
            reason = upstream.close_reason or ""
            if code is None or code in (1005, 1006):  # no code, or the owner died: not a clean close
                code, reason = (1000, "") if code == 1005 else (1011, "the worker holding this session went away")
            await send({"type": "websocket.close", "code": code, "reason": reason})

        async def up() -> None:
            while (message := await receive())["type"] == "websocket.receive":
                text = message.get("text")
                await upstream.send(text if text is not None else (message.get("bytes") or b""))

        tasks = (asyncio.ensure_future(down()), asyncio.ensure_future(up()))
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await upstream.close()

    async def _denied(self, scope: Scope, send: Any, refusal: Any) -> None:
        """The owner refused the handshake (a path with no WebSocket route, say): the client gets
        the owner's answer, as if it had landed there, rather than a ``WORKER_LOST`` that would void
        its episode for what is no failure of the server's."""
        if "websocket.http.response" not in (scope.get("extensions") or {}):
            await send({"type": "websocket.close", "code": 1008})  # the server answers 403 without a body
            return
        response = refusal.response
        headers = [
            (key.lower().encode("latin-1"), value.encode("latin-1"))
            for key, value in response.headers.raw_items()
            if key.lower().encode("latin-1") not in _NOT_REPLAYED
        ]
        start = {"type": "websocket.http.response.start", "status": response.status_code}
        await send({**start, "headers": [*headers, (VIA_HEADER, self.worker)]})
        await send({"type": "websocket.http.response.body", "body": response.body or b""})

    # -- lifespan ---------------------------------------------------------------------------------

    def _closing(self, send: Any) -> Any:
        """``send`` for the lifespan: the connections to the siblings close with the app, and the
        worker takes its socket out of the private directory (the last one out removes it, so a
        supervisor killed with SIGKILL leaves nothing behind either)."""

        async def closing(message: Message) -> None:
            if message["type"] == "lifespan.shutdown.complete":
                relays, self._relays = list(self._relays.values()), {}
                for relay in relays:
                    relay.close()
                with contextlib.suppress(OSError):
                    os.unlink(self.place.socket_path(self.place.index))
                    os.rmdir(self.place.sockets)
            await send(message)

        return closing


_WS_KEPT = frozenset({b"origin", b"cookie", b"authorization"})
"""What a proxied WebSocket handshake keeps of the client's (Host goes in the URL)."""
_NOT_REPLAYED = HOP_BY_HOP | {b"content-length", b"date", b"server"}
"""Headers of an owner's refused handshake that uvicorn makes again for the client."""


async def _read_up_to(receive: Any, limit: int) -> tuple[bytes, bool]:
    """``(body, more)``: the request body, or its first ``limit`` bytes or so and ``more=True``."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more and size < limit:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks), more and size >= limit


def _replay(body: bytes, more: bool, receive: Any) -> Any:
    """A ``receive`` giving ``body`` first, then whatever is left of the request."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        message: Message = await receive()
        return message

    return replay


def _naming(send: Any, worker: bytes) -> Any:
    """``send``, naming ``worker`` on the reply it starts: what the router answers itself (a
    refusal, a lost owner) names its worker as every reply does."""

    async def named(message: Message) -> None:
        if message["type"] in ("http.response.start", "websocket.http.response.start"):
            message = {**message, "headers": [*(message.get("headers") or ()), (WORKER_HEADER, worker)]}
        await send(message)

    return named


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _lost_body(owner: int, exc: BaseException) -> bytes:
    lost = WorkerLostError(f"worker {owner}, which holds this session, did not answer ({type(exc).__name__}: {exc})")
    return encode({"type": "error", "data": error_data(lost)})


async def _lost(send: Any, owner: int, exc: BaseException) -> None:
    body = _lost_body(owner, exc)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 502, "headers": headers})
    await send({"type": "http.response.body", "body": body})
