"""HTTP/1.1 from one worker to a sibling over its Unix socket: the forwarding hop, kept lean.

A forwarded request costs the forwarding worker one write and one read on a kept-alive local
connection, not a general HTTP client's machinery (httpx costs several times the Wordle step
it carries). Bodies are ours to bound: every body-bearing route refuses more than
``max_message_bytes``, so a request body is read whole up to that (and streamed beyond it, for
the owner to refuse); responses are streamed as they come (SSE included), with their framing
(``Content-Length``, chunked, or until the connection closes) read and re-made by uvicorn.

A request that meets a kept-alive connection the owner has just closed is sent again on a new
one, once, when nothing of the reply came back and its body was read whole: the owner never saw it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["HOP_BY_HOP", "Relay", "RelayError"]

HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"transfer-encoding", b"upgrade"}
)
"""Headers about one connection, never passed on."""
IDLE_S = 2.0
"""A kept-alive connection idle longer is not reused: uvicorn closes its side after 5 s."""
_NO_BODY = (204, 304)


class RelayError(ConnectionError):
    """The sibling could not be reached, or went away before its reply began."""


class Relay:
    """Kept-alive HTTP/1.1 connections to one sibling's Unix socket."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._idle: list[tuple[float, asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def forward(
        self,
        head: bytes,
        body: bytes,
        rest: Callable[[], Awaitable[bytes | None]] | None,
        method: str,
        send: Any,
        gone: Callable[[], Awaitable[None]],
        extra: list[tuple[bytes, bytes]],
    ) -> None:
        """Send ``head`` (request line and headers, without framing) and the body, then stream the
        reply to ``send`` with ``extra`` headers added. ``rest()`` gives what is left of a body
        longer than ``body`` (None: nothing more); ``gone()`` returns when the client leaves.
        Raises :class:`RelayError` when nothing of the reply came back."""
        for attempt in (0, 1):
            reused, reader, writer = await self._connect(fresh=attempt > 0)
            try:
                await _write_request(writer, head, body, rest)
                line = await reader.readuntil(b"\r\n\r\n")
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
                writer.close()
                if attempt == 0 and reused and rest is None:
                    continue  # the owner closed this idle connection just as we reused it
                raise RelayError(f"{type(exc).__name__}: {exc}") from exc
            keep = await self._reply(line, reader, method, send, gone, extra)
            if keep:
                self._idle.append((time.monotonic(), reader, writer))
            else:
                writer.close()
            return

    def close(self) -> None:
        for _, _, writer in self._idle:
            writer.close()
        self._idle.clear()

    async def _connect(self, fresh: bool) -> tuple[bool, asyncio.StreamReader, asyncio.StreamWriter]:
        now = time.monotonic()
        # The oldest first: reuse takes the newest, so after a burst the rest would stay open for good.
        stale = 0
        while stale < len(self._idle) and now - self._idle[stale][0] >= IDLE_S:
            self._idle[stale][2].close()
            stale += 1
        del self._idle[:stale]
        while self._idle and not fresh:
            used, reader, writer = self._idle.pop()
            if now - used < IDLE_S and not reader.at_eof() and not writer.is_closing():
                return True, reader, writer
            writer.close()
        try:
            reader, writer = await asyncio.open_unix_connection(self.path, limit=1 << 20)
        except OSError as exc:
            raise RelayError(f"{type(exc).__name__}: {exc}") from exc
        return False, reader, writer

    async def _reply(
        self,
        head: bytes,
        reader: asyncio.StreamReader,
        method: str,
        send: Any,
        gone: Callable[[], Awaitable[None]],
        extra: list[tuple[bytes, bytes]],
    ) -> bool:
        """Stream one reply to ``send``; returns whether the connection can be used again."""
        lines = head[:-4].split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        headers: list[tuple[bytes, bytes]] = []
        length, chunked, close = None, False, False
        for line in lines[1:]:
            key, _, value = line.partition(b":")
            key, value = key.strip().lower(), value.strip()
            if key == b"content-length":
                length = int(value)
            elif key == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif key == b"connection":
                close = b"close" in value.lower()
            if key not in HOP_BY_HOP:
                headers.append((key, value))
        await send({"type": "http.response.start", "status": status, "headers": [*headers, *extra]})
        if method == "HEAD" or status in _NO_BODY or 100 <= status < 200:
            await send({"type": "http.response.body", "body": b""})
            return not close
        if length is not None:
            body = await reader.readexactly(length)
            await send({"type": "http.response.body", "body": body})
            return not close
        # A stream (SSE): chunk by chunk, until it ends or the client leaves.
        pump = asyncio.ensure_future(_stream(reader, send, chunked))
        left = asyncio.ensure_future(gone())
        try:
            await asyncio.wait((pump, left), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (pump, left):
                task.cancel()
            results = await asyncio.gather(pump, left, return_exceptions=True)
        finished = pump.done() and not pump.cancelled() and results[0] is None
        if finished:
            with contextlib.suppress(OSError):
                await send({"type": "http.response.body", "body": b""})
        return finished and chunked and not close


async def _write_request(
    writer: asyncio.StreamWriter, head: bytes, body: bytes, rest: Callable[[], Awaitable[bytes | None]] | None
) -> None:
    if rest is None:
        writer.write(b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body))
    else:  # longer than any route accepts: streamed on, chunked, for the owner to refuse
        writer.write(b"%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (head, len(body), body))
        while (chunk := await rest()) is not None:
            if chunk:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
        writer.write(b"0\r\n\r\n")
    await writer.drain()


async def _stream(reader: asyncio.StreamReader, send: Any, chunked: bool) -> None:
    """Send a reply body of unknown length as it arrives (chunked, or until the connection ends)."""
    if not chunked:
        while chunk := await reader.read(1 << 16):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        return
    while True:
        size = int((await reader.readline()).split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # the last, empty line (no trailers are sent to us)
            return
        chunk = await reader.readexactly(size)
        await reader.readexactly(2)
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
