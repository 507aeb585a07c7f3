"""The capture proxy's side of the wire to the inference server: aiohttp's client, kept alive.

The proxy sends one known request to one known server, on every model call of every episode, so
the client's own cost per call is most of what the proxy adds. aiohttp parses HTTP in C (llhttp):
an answer of a few KB cost the proxy about 0.23 ms of CPU through it, against 0.44 ms through
httpcore, whose HTTP is h11's pure Python (``benchmarks/capture.py`` measures the whole proxy).
The client is set up to change nothing on the way: no cookie jar (harnesses must not share one),
no redirects followed, no body decompressed, no header added but Host and Content-Length.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import aiohttp
from yarl import URL

from omnienv.protocol.codec import MAX_ANSWER_BYTES

__all__ = [
    "HEAD_LINE_BYTES",
    "MALFORMED",
    "MAX_ANSWER_BYTES",
    "TIMED_OUT",
    "UNREACHABLE",
    "Answer",
    "AnswerTooLarge",
    "Upstream",
]

TIMED_OUT = (TimeoutError,)
"""What an exchange that took too long raises (aiohttp's socket timeouts are TimeoutErrors)."""


class AnswerTooLarge(aiohttp.ClientPayloadError):
    """An answer over :data:`MAX_ANSWER_BYTES`: one the proxy cannot read."""


MALFORMED = (aiohttp.ClientResponseError, aiohttp.ClientPayloadError)
"""What an answer the proxy cannot read raises: not HTTP, a head over :data:`HEAD_LINE_BYTES`, a body cut off."""
UNREACHABLE = (aiohttp.ClientError, *TIMED_OUT)
"""What a failed exchange with the upstream raises: it could not be reached, broke off, timed out or
sent what the proxy cannot read (:data:`MALFORMED`)."""
HEAD_LINE_BYTES = 65_536
"""The longest status or header line of an answer that the proxy reads (aiohttp's default is 8,190)."""

_NOT_ADDED = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")


class Answer:
    """The upstream's answer: its status and headers (as they came, bytes), its body read whole
    (:meth:`aread`) or as it arrives (:meth:`aiter_stream`); :meth:`aclose` once done with it."""

    __slots__ = ("_response", "headers", "status")

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status
        self.headers: tuple[tuple[bytes, bytes], ...] = response.raw_headers

    async def aread(self) -> bytes:
        """The whole body; :data:`AnswerTooLarge` when it is (or says it will be) over :data:`MAX_ANSWER_BYTES`
        (a stream is not read whole: it is passed on as it comes)."""
        length = self._response.content_length
        if length is not None and length > MAX_ANSWER_BYTES:
            raise AnswerTooLarge(f"the answer announced {length:,} bytes, over the {MAX_ANSWER_BYTES:,}-byte limit")
        parts, size = [], 0
        async for part in self._response.content.iter_any():
            size += len(part)
            if size > MAX_ANSWER_BYTES:
                raise AnswerTooLarge(f"the answer is over the {MAX_ANSWER_BYTES:,}-byte limit")
            parts.append(part)
        return b"".join(parts)

    def aiter_stream(self) -> AsyncIterator[bytes]:
        return self._response.content.iter_any()

    @property
    def complete(self) -> bool:
        """Every byte of the body has arrived and been read."""
        return self._response.content.at_eof()

    def abort(self) -> None:
        """Close the connection now, mid-answer: closing is what stops the model's generation."""
        self._response.close()

    async def aclose(self) -> None:
        """Hand the connection back, or close it when the body was not read to its end (a harness
        that went away mid-stream)."""
        if self._response.content.is_eof():
            self._response.release()
        else:
            self.abort()


class Upstream:
    """One inference server: ``send`` makes a request on a kept-alive connection.

    ``base`` is the base URL a client would use (``http://host:8000/v1``, or the server root).
    The client is made on first use, on the event loop that serves the proxy."""

    def __init__(
        self, base: str, *, timeout: float = 600.0, connections: int = 1024, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        parts = urlsplit(base.rstrip("/").removesuffix("/v1"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the upstream must be an http(s) URL, got {_shown(base)!r}")
        # what comes before /v1 on the upstream; credentials in the URL are never sent
        self._base = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"
        self.root = self._base
        """The upstream as messages and logs name it: without the credentials its URL may hold."""
        # connecting: 10 s at most; each read of the answer (and waiting for a free connection): ``timeout``;
        # the proxy bounds a whole (not streamed) exchange by ``timeout`` too, see ProxyApp._capture
        self._timeout = aiohttp.ClientTimeout(
            total=None, connect=timeout, sock_connect=min(10.0, timeout), sock_read=timeout
        )
        self._connections = connections
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._connections, limit_per_host=0, ssl=self._ssl),
                timeout=self._timeout,
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
                skip_auto_headers=_NOT_ADDED,
                max_line_size=HEAD_LINE_BYTES,
                max_field_size=HEAD_LINE_BYTES,
            )
        return self._session

    async def send(self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> Answer:
        """The answer's status and headers; read its body with ``aread``/``aiter_stream``, then ``aclose``.

        ``target`` is the path after the upstream's root (``/v1/chat/completions?...``); ``headers``
        must hold no Host or Content-Length, which are set here. Raises one of :data:`UNREACHABLE`."""
        response = await self._client().request(
            method.decode("ascii"),
            URL(self._base + target.decode("latin-1"), encoded=True),
            headers=[(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers],
            data=body or None,
            allow_redirects=False,
        )
        return Answer(response)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _shown(url: str) -> str:
    """``url`` without the credentials it may hold, for messages."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
