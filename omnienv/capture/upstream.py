"""The capture proxy's side of the wire to the inference server: httpcore's connection pool, kept alive.

httpx's client layers (URL and header models, cookies, auth, redirects, event hooks) cost more per
call than the rest of the proxy's work, and the proxy needs none of them: it sends one known
request to one known server. So it uses httpcore's pool directly (h11 speaks the HTTP), on a
network backend of its own over asyncio's streams, which skips a layer of anyio per read and write
and sends each request in one write: httpcore writes a request's head and body separately (two
segments, two wake-ups of the server), and :class:`_Stream` holds what it writes until it reads,
which HTTP/1.1 does only once the whole request is written.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import httpcore

__all__ = ["UNREACHABLE", "Upstream"]

UNREACHABLE = (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol)
"""What a failed exchange with the upstream raises (a timeout is a :class:`httpcore.TimeoutException`)."""

_EXTRA = {"client_addr": "sockname", "server_addr": "peername", "socket": "socket", "ssl_object": "ssl_object"}


class _Stream(httpcore.AsyncNetworkStream):
    """One connection, as httpcore's network stream, over asyncio's reader and writer.

    Writes wait for the next read: a request leaves in one write. Timeouts and failures are
    raised as httpcore's own exceptions, which its connections expect."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._held: list[bytes] = []

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:
            self._held.append(buffer)

    async def _flush(self) -> None:
        held, self._held = b"".join(self._held), []
        self._writer.write(held)
        await self._writer.drain()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                if self._held:
                    await self._flush()
                return await self._reader.read(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(f"no answer in {timeout} s") from exc
        except OSError as exc:
            raise httpcore.ReadError(repr(exc)) from exc

    async def aclose(self) -> None:
        self._held = []
        self._writer.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                if self._held:
                    await self._flush()
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"no TLS handshake in {timeout} s") from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ConnectError(repr(exc)) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # an idle kept-alive connection the server has closed is not reused
            return self._reader.at_eof() or self._writer.is_closing()
        return self._writer.get_extra_info(_EXTRA[info]) if info in _EXTRA else None


class _Backend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                local = (local_address, 0) if local_address else None
                reader, writer = await asyncio.open_connection(host, port, local_addr=local)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"could not connect in {timeout} s") from exc
        except OSError as exc:
            raise httpcore.ConnectError(repr(exc)) from exc
        for option in socket_options or ():
            writer.get_extra_info("socket").setsockopt(*option)
        return _Stream(reader, writer)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("the capture proxy reaches its upstream over TCP")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class Upstream:
    """One inference server: ``send`` makes a request on a kept-alive connection.

    ``base`` is the base URL a client would use (``http://host:8000/v1``, or the server root).
    The pool is made on first use, on the event loop that serves the proxy."""

    def __init__(
        self, base: str, *, timeout: float = 600.0, connections: int = 1024, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.root = base.rstrip("/").removesuffix("/v1")
        parts = urlsplit(self.root)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the upstream must be an http(s) URL, got {base!r}")
        self._scheme = parts.scheme.encode()
        self._host = parts.hostname.encode("idna")
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._prefix = parts.path.encode()  # what comes before /v1 on the upstream (usually nothing)
        self._host_header = (b"host", parts.netloc.rpartition("@")[2].encode("idna"))
        self._timeouts = {"connect": min(10.0, timeout), "read": timeout, "write": timeout, "pool": timeout}
        self._connections = connections
        self._ssl_context = ssl_context
        self._pool: httpcore.AsyncConnectionPool | None = None

    def _connection_pool(self) -> httpcore.AsyncConnectionPool:
        if self._pool is None:
            self._pool = httpcore.AsyncConnectionPool(
                ssl_context=self._ssl_context or (ssl.create_default_context() if self._scheme == b"https" else None),
                max_connections=self._connections,
                max_keepalive_connections=self._connections,
                network_backend=_Backend(),
            )
        return self._pool

    async def send(
        self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> httpcore.Response:
        """The answer's status and headers; read its body with ``aread``/``aiter_stream``, then ``aclose``.

        ``target`` is the path after the upstream's root (``/v1/chat/completions?...``); ``headers``
        must hold no Host or Content-Length, which are set here. Raises one of :data:`UNREACHABLE`."""
        url = httpcore.URL(scheme=self._scheme, host=self._host, port=self._port, target=self._prefix + target)
        headers = [self._host_header, *headers]
        if body or method not in (b"GET", b"HEAD", b"DELETE", b"OPTIONS"):
            headers.append((b"content-length", str(len(body)).encode()))
        request = httpcore.Request(method, url, headers=headers, content=body, extensions={"timeout": self._timeouts})
        return await self._connection_pool().handle_async_request(request)

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.aclose()
