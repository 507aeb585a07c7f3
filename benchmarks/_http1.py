"""The HTTP/1.1 client of ``workers.py``'s ``http`` transport, shaped as a trainer's HTTP client is.

``workers.py`` drives a many-worker server from a few client processes; a Python HTTP library
costs more per request than the server's forwarding does, and would measure itself. So the client
is the least that speaks keep-alive HTTP/1.1 (``Http1``), pooled the way an HTTP client's pool is
(``Pool``): sessions share the connections, so a session's requests land on whichever worker
accepted the connection they took, which is what makes the server forward them.
"""

from __future__ import annotations

import asyncio
import random

__all__ = ["Http1", "Pool"]


class Http1:
    """A minimal HTTP/1.1 keep-alive connection (a Python HTTP library would be the bottleneck)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, port: int) -> Http1:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, f"127.0.0.1:{port}")

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
        self.writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if "content-length" in headers:
            return status, headers, await self.reader.readexactly(int(headers["content-length"]))
        chunks = []
        while size := int((await self.reader.readline()).strip(), 16):
            chunks.append(await self.reader.readexactly(size))
            await self.reader.readline()
        await self.reader.readline()
        return status, headers, b"".join(chunks)


class Pool:
    """Keep-alive connections shared by many sessions; each request takes a free one at random, as
    an HTTP client's pool does (a FIFO queue would tie each session to one connection by rhythm)."""

    def __init__(self, connections: list[Http1]) -> None:
        self.connections = connections
        self.locks = [asyncio.Lock() for _ in connections]

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
        order = random.sample(range(len(self.connections)), len(self.connections))
        pick = next((i for i in order if not self.locks[i].locked()), order[0])
        async with self.locks[pick]:
            return await self.connections[pick].request(method, path, body)

    def close(self) -> None:
        for connection in self.connections:
            connection.writer.close()
