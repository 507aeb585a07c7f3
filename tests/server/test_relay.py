"""The forwarding hop between workers (:class:`omnienv.server.relay.Relay`), against small real
HTTP servers on a Unix socket in a temporary directory: replies of each framing, streamed bodies,
a kept-alive connection the other side closed, and a sibling that is not there."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from omnienv.server.relay import Relay, RelayError

Handler = Callable[[bytes, bytes], bytes]
"""``(request head, body) -> the whole raw reply``."""


async def serve_unix(path: Path, handler: Handler, close_after: int = 0) -> asyncio.AbstractServer:
    """An HTTP/1.1 server on ``path``; closes each connection after ``close_after`` replies (0: never)."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served = 0
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                body = b""
                if b"transfer-encoding: chunked" in head.lower():
                    while size := int((await reader.readline()).strip(), 16):
                        body += await reader.readexactly(size)
                        await reader.readexactly(2)
                    await reader.readexactly(2)
                elif (length := _header(head, b"content-length")) is not None:
                    body = await reader.readexactly(int(length))
                writer.write(handler(head, body))
                await writer.drain()
                served += 1
                if served == close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    return await asyncio.start_unix_server(connection, str(path))


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def echo(head: bytes, body: bytes) -> bytes:
    reply = head.split(b"\r\n", 1)[0] + b" " + body
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\nx-owner: 1\r\n\r\n%s" % (len(reply), reply)


class Recorder:
    """An ASGI ``send`` keeping every message."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.messages[0]["headers"])

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages[1:])


async def never() -> None:
    await asyncio.Event().wait()


async def forward(relay: Relay, method: bytes = b"POST", body: bytes = b"{}", **options: Any) -> Recorder:
    send = Recorder()
    head = b"%s /sessions/x/step HTTP/1.1\r\nhost: 127.0.0.1:8000\r\n" % method
    rest: Callable[[], Awaitable[bytes | None]] | None = options.pop("rest", None)
    await relay.forward(head, body, rest, method.decode(), send, options.pop("gone", never), [(b"x-via", b"0")])
    return send


def run(coroutine: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 10))


def test_a_reply_comes_back_whole_with_the_extra_headers_and_the_connection_is_kept(tmp_path: Path) -> None:
    async def main() -> tuple[Recorder, Recorder, int]:
        server = await serve_unix(tmp_path / "w.sock", echo)
        relay = Relay(str(tmp_path / "w.sock"))
        first = await forward(relay, body=b'{"a": 1}')
        second = await forward(relay, b"GET", b"")
        kept = len(relay._idle)
        relay.close()
        server.close()
        return first, second, kept

    first, second, kept = run(main())
    assert first.status == 200 and first.body == b'POST /sessions/x/step HTTP/1.1 {"a": 1}'
    assert first.headers[b"x-owner"] == b"1" and first.headers[b"x-via"] == b"0"
    assert second.body == b"GET /sessions/x/step HTTP/1.1 " and kept == 1


def test_a_connection_the_sibling_closed_meanwhile_is_replaced_once(tmp_path: Path) -> None:
    async def main() -> list[bytes]:
        server = await serve_unix(tmp_path / "w.sock", echo, close_after=1)
        relay = Relay(str(tmp_path / "w.sock"))
        bodies = [(await forward(relay, body=b"%d" % i)).body for i in range(3)]
        server.close()
        return bodies

    assert [body[-1:] for body in run(main())] == [b"0", b"1", b"2"]


def test_a_streamed_reply_arrives_chunk_by_chunk_and_a_body_beyond_the_limit_is_streamed_on(tmp_path: Path) -> None:
    def stream(head: bytes, body: bytes) -> bytes:
        chunks = [b"event: a\n\n", b"data: %d\n\n" % len(body)]
        framed = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks)
        return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + framed + b"0\r\n\r\n"

    async def main() -> Recorder:
        server = await serve_unix(tmp_path / "w.sock", stream)
        parts = [b"b" * 10, b"", b"c" * 5]

        async def rest() -> bytes | None:
            return parts.pop(0) if parts else None

        send = await forward(Relay(str(tmp_path / "w.sock")), body=b"a" * 7, rest=rest)
        server.close()
        return send

    send = run(main())
    assert send.body == b"event: a\n\ndata: 22\n\n"
    assert b"transfer-encoding" not in send.headers  # uvicorn frames the reply again
    assert [m.get("more_body") for m in send.messages[1:]] == [True, True, None]


def test_a_client_leaving_a_stream_ends_it(tmp_path: Path) -> None:
    def endless(head: bytes, body: bytes) -> bytes:
        return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n"  # and never more

    async def main() -> Recorder:
        server = await serve_unix(tmp_path / "w.sock", endless)
        left = asyncio.Event()
        left.set()  # the client is gone by the time the stream starts: the endless stream must end
        relay = Relay(str(tmp_path / "w.sock"))
        send = await forward(relay, b"GET", b"", gone=left.wait)
        assert not relay._idle  # a stream cut short is not a connection to reuse
        server.close()
        return send

    assert run(main()).status == 200


def test_a_sibling_that_is_not_there_is_a_relay_error(tmp_path: Path) -> None:
    with pytest.raises(RelayError, match=r"FileNotFoundError|ConnectionRefusedError"):
        run(forward(Relay(str(tmp_path / "nobody.sock"))))


def test_connections_left_idle_after_a_burst_are_closed_not_kept_for_good(tmp_path: Path) -> None:
    """Reuse takes the newest idle connection, so the older ones of a burst would never be touched."""

    async def main() -> tuple[int, int, list[bool]]:
        server = await serve_unix(tmp_path / "w.sock", echo)
        relay = Relay(str(tmp_path / "w.sock"))
        await asyncio.gather(*(forward(relay, body=b"%d" % i) for i in range(5)))
        after_burst = len(relay._idle)
        old = [writer for _, _, writer in relay._idle[:-1]]
        # the burst is long past; only the newest connection is in steady use since
        relay._idle = [(used - 60, reader, writer) for used, reader, writer in relay._idle[:-1]] + relay._idle[-1:]
        await forward(relay)
        kept = len(relay._idle)
        closed = [writer.is_closing() for writer in old]
        relay.close()
        server.close()
        return after_burst, kept, closed

    after_burst, kept, closed = run(main())
    assert after_burst == 5 and kept == 1 and all(closed)
