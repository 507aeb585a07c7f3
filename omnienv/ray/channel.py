"""A direct connection from the front server to a host actor, for the hot path.

A Ray actor call costs its caller hundreds of microseconds of CPU (task submission, gRPC, the
reference counting of the reply), and the actor as much again: on a small machine that, not the
environment, bounds the steps per second. So the front's batches of calls
(:mod:`omnienv.ray.batching`) travel over a TCP connection of their own to the actor, and Ray
only places, starts, watches and replaces actors.

- **Who may connect.** The actor makes a fresh 32-byte secret, and the front learns it, with the
  address, through Ray (the cluster's own channel, token-authenticated when the cluster is): a
  connection must show the secret first, within a few seconds, or it is closed unread. Nothing of
  what arrives before that is unpickled.
- **Where.** The actor listens on its Ray node's address, so a cluster pinned to loopback keeps
  this connection on loopback too.
- **Frames.** ``!II`` (request id, length) then a pickled batch (:func:`~omnienv.ray.host.encode`);
  each request's reply carries its id, so an actor may answer batches out of order. A batch the
  actor could not answer at all gets a pickled :class:`~omnienv.core.EnvironmentFailure` for a
  reply, which every call of the batch raises (as a Ray call's error would): the actor lives on.
- **Loss.** When the connection breaks (the actor or its node died), every call in flight fails
  with :class:`ChannelLost`, and the front treats the actor as dead: it kills it and starts a
  replacement (:meth:`~omnienv.ray.placement.HostPool.lost`). A peer gone silent (a node cut
  off) is given up after about :data:`SILENCE_S` seconds: keepalive probes when the connection is
  idle, ``TCP_USER_TIMEOUT`` when data waits unacknowledged.
- **Fallback.** A front that cannot connect at all (a firewall between nodes) says so once in
  its log and keeps using Ray calls for that actor (:class:`ChannelUnreachable`).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import pickle
import secrets
import selectors
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from omnienv.core.errors import EnvironmentFailure

__all__ = [
    "AsyncChannelServer",
    "ChannelAddress",
    "ChannelClient",
    "ChannelLost",
    "ChannelUnreachable",
    "ThreadChannelServer",
]

logger = logging.getLogger("omnienv.ray")

HEADER = struct.Struct("!II")
SECRET_BYTES = 32
AUTH_TIMEOUT_S = 5.0
"""How long a new connection has to show the secret."""
CONNECT_TIMEOUT_S = 10.0
SILENCE_S = 20
"""How long a peer may stay silent (no acknowledgement, no keepalive answer) before the
connection is given up as broken."""


class ChannelLost(ConnectionError):
    """The connection to a host actor broke: the actor (or its node) is gone."""


class ChannelUnreachable(ConnectionError):
    """No connection to the actor could be opened; nothing was sent, so Ray may carry the call."""


@dataclass(frozen=True)
class ChannelAddress:
    """Where an actor listens and the secret it asks for (hex): learnt through Ray."""

    host: str
    port: int
    secret: str

    def __repr__(self) -> str:  # the secret stays out of logs and tracebacks
        return f"ChannelAddress({self.host}:{self.port})"


def _tune(sock: socket.socket) -> None:
    """No Nagle delay (a batch is one write), and a silent peer given up after :data:`SILENCE_S`."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    half = SILENCE_S // 2
    for option, value in (
        ("TCP_KEEPIDLE", half),
        ("TCP_KEEPINTVL", max(1, half // 5)),
        ("TCP_KEEPCNT", 5),
        ("TCP_USER_TIMEOUT", SILENCE_S * 1000),
    ):
        if hasattr(socket, option):  # Linux has them all; elsewhere the system's defaults hold
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def _listener(host: str) -> tuple[socket.socket, ChannelAddress]:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.create_server((host, 0), family=family, backlog=64)
    return listener, ChannelAddress(host, listener.getsockname()[1], secrets.token_hex(SECRET_BYTES))


def _secret_matches(shown: bytes, address: ChannelAddress) -> bool:
    return hmac.compare_digest(shown, bytes.fromhex(address.secret))


def _failed_batch(exc: Exception) -> bytes:
    logger.error("a host actor could not answer a batch", exc_info=exc)
    return pickle.dumps(EnvironmentFailure(f"the environment host failed on this batch: {type(exc).__name__}: {exc}"))


# -- the actor's side ---------------------------------------------------------------------------


class ThreadChannelServer:
    """For an actor without an event loop (:class:`~omnienv.ray.host.InlineEnvHost`): one thread
    accepts connections and reads their secrets, and a thread per connection that showed it
    answers its batches in order, each through ``answer(batch) -> replies`` (which must be safe
    to call beside the actor's Ray calls).

    A connection that has not shown the secret yet costs a descriptor, never a thread: a flood
    of silent peers cannot exhaust the actor's threads, or stop the accepting one.
    """

    def __init__(self, answer: Callable[[bytes], bytes], host: str) -> None:
        self.answer = answer
        self.listener, self.address = _listener(host)
        self.listener.setblocking(False)
        self._wake_reader, self._wake_writer = socket.socketpair()
        # registered here, not in the thread: a close() that comes before the thread runs then
        # leaves it the wake-up to find, not a closed listener to register
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.listener, selectors.EVENT_READ)
        self._selector.register(self._wake_reader, selectors.EVENT_READ)
        self.accepting = threading.Thread(target=self._accept, name="omnienv-channel", daemon=True)
        self.accepting.start()

    def _accept(self) -> None:
        selector = self._selector
        pending: dict[socket.socket, tuple[float, bytes]] = {}
        """Connections yet to show the secret: the deadline, and what they showed so far."""
        accept_failed = False

        def drop(conn: socket.socket) -> None:
            selector.unregister(conn)
            del pending[conn]
            conn.close()

        try:
            while True:
                now = time.monotonic()
                for conn in [c for c, (deadline, _) in pending.items() if deadline <= now]:
                    drop(conn)
                wait = min((deadline for deadline, _ in pending.values()), default=None)
                for key, _ in selector.select(None if wait is None else max(0.0, wait - now)):
                    if key.fileobj is self._wake_reader:
                        return
                    if key.fileobj is self.listener:
                        try:
                            conn, _ = self.listener.accept()
                        except (BlockingIOError, InterruptedError):
                            continue
                        except OSError as exc:  # out of descriptors, say: pause while those pending expire
                            if not accept_failed:
                                logger.warning("the channel could not accept a connection: %s", exc)
                                accept_failed = True
                            time.sleep(0.05)  # the listener stays readable: do not spin on it
                            continue
                        conn.setblocking(False)
                        pending[conn] = (time.monotonic() + AUTH_TIMEOUT_S, b"")
                        selector.register(conn, selectors.EVENT_READ)
                        continue
                    conn = key.fileobj  # type: ignore[assignment]
                    deadline, shown = pending[conn]
                    try:
                        chunk = conn.recv(SECRET_BYTES - len(shown))
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        chunk = b""
                    if chunk and len(shown + chunk) < SECRET_BYTES:
                        pending[conn] = (deadline, shown + chunk)
                        continue
                    selector.unregister(conn)
                    del pending[conn]
                    if not chunk or not _secret_matches(shown + chunk, self.address):
                        conn.close()
                        continue
                    self._start_serving(conn)
        finally:
            for conn in list(pending):
                drop(conn)
            selector.close()
            self._wake_reader.close()

    def _start_serving(self, conn: socket.socket) -> None:
        conn.setblocking(True)
        try:
            threading.Thread(target=self._serve, args=(conn,), name="omnienv-channel-conn", daemon=True).start()
        except RuntimeError:  # no thread to be had: the front finds the connection closed, as lost
            logger.error("the channel could not start a thread for the front's connection")
            conn.close()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                _tune(conn)
                stream = conn.makefile("rb", buffering=1 << 16)
                while len(header := stream.read(HEADER.size)) == HEADER.size:
                    request, size = HEADER.unpack(header)
                    batch = stream.read(size)
                    if len(batch) < size:
                        return
                    try:
                        reply = self.answer(batch)
                    except Exception as exc:
                        reply = _failed_batch(exc)
                    conn.sendall(HEADER.pack(request, len(reply)) + reply)
            except OSError:  # the front went away
                return

    def close(self) -> None:
        """Stop accepting (the accepting thread drops those still pending and ends); connections
        already served end when their front closes them."""
        self.listener.close()
        try:
            self._wake_writer.send(b"x")
        except OSError:  # closed already
            pass
        self._wake_writer.close()


class AsyncChannelServer:
    """For an async actor (:class:`~omnienv.ray.host.EnvHost`): connections served on the
    actor's own event loop, each batch answered as its own task (``await answer(batch)``), so a
    slow call does not hold up the batches behind it."""

    def __init__(self, answer: Callable[[bytes], Awaitable[bytes]], host: str) -> None:
        self.answer = answer
        self.listener, self.address = _listener(host)
        self.server: asyncio.Server | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> ChannelAddress:
        self.server = await asyncio.start_server(self._serve, sock=self.listener)
        return self.address

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            _tune(writer.get_extra_info("socket"))
            shown = await asyncio.wait_for(reader.readexactly(SECRET_BYTES), AUTH_TIMEOUT_S)
            if not _secret_matches(shown, self.address):
                return
            while True:
                request, size = HEADER.unpack(await reader.readexactly(HEADER.size))
                task = asyncio.create_task(self._answer(writer, request, await reader.readexactly(size)))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, request: int, batch: bytes) -> None:
        try:
            reply = await self.answer(batch)
        except Exception as exc:
            reply = _failed_batch(exc)
        if not writer.is_closing():
            writer.write(HEADER.pack(request, len(reply)) + reply)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        else:
            self.listener.close()


# -- the front's side ---------------------------------------------------------------------------


class _Replies(asyncio.Protocol):
    """Reads reply frames and hands each to the future waiting for it."""

    def __init__(self, client: ChannelClient) -> None:
        self.client = client
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        waiting = self.client.waiting
        while len(buffer) >= HEADER.size:
            request, size = HEADER.unpack_from(buffer)
            end = HEADER.size + size
            if len(buffer) < end:
                return
            reply = bytes(buffer[HEADER.size : end])
            del buffer[:end]
            future = waiting.pop(request, None)
            if future is not None and not future.done():
                future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.lose(exc or EOFError("the actor closed the connection"))


class ChannelClient:
    """The front's connection to one actor, on one event loop; opened on the first request."""

    def __init__(self, address: ChannelAddress, loop: asyncio.AbstractEventLoop) -> None:
        self.address = address
        self.loop = loop
        self.waiting: dict[int, asyncio.Future[bytes]] = {}
        self.transport: asyncio.Transport | None = None
        self.sock: socket.socket | None = None
        self.lost: ChannelLost | None = None
        self._next = 0
        self._opening: asyncio.Future[None] | None = None

    async def request(self, batch: bytes) -> bytes:
        """Send one pickled batch and wait for the actor's pickled replies.

        Raises :class:`ChannelUnreachable` when no connection could be opened (nothing was sent),
        :class:`ChannelLost` when the connection broke before the reply came."""
        if self.transport is None:
            await self._open()
        if self.lost is not None:
            raise self.lost
        assert self.transport is not None
        self._next = request = (self._next + 1) & 0xFFFFFFFF
        future: asyncio.Future[bytes] = self.loop.create_future()
        self.waiting[request] = future
        self.transport.write(HEADER.pack(request, len(batch)) + batch)
        return await future

    async def _open(self) -> None:
        if self._opening is None:  # the first request opens it; those beside it wait for that
            self._opening = self.loop.create_future()
            try:
                await self._connect()
            except BaseException as exc:
                self._opening.set_exception(exc)
                self._opening.exception()  # retrieved: the others waiting may be none
                raise
            self._opening.set_result(None)
        else:
            await asyncio.shield(self._opening)

    async def _connect(self) -> None:
        address = self.address
        family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            _tune(sock)
            await asyncio.wait_for(self.loop.sock_connect(sock, (address.host, address.port)), CONNECT_TIMEOUT_S)
            transport, _ = await self.loop.create_connection(lambda: _Replies(self), sock=sock)
        except (TimeoutError, OSError) as exc:
            sock.close()
            raise ChannelUnreachable(
                f"cannot connect to the host actor at {address.host}:{address.port}: {exc}"
            ) from exc
        self.sock = sock
        self.transport = transport
        transport.write(bytes.fromhex(address.secret))

    def lose(self, exc: BaseException) -> None:
        """The connection broke: fail every call in flight, and every later one."""
        if self.lost is None:
            self.lost = ChannelLost(f"the connection to the host actor broke ({type(exc).__name__}: {exc})")
        waiting, self.waiting = self.waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(self.lost)

    def close(self) -> None:
        """Close the connection, from any thread, even after its loop stopped."""
        transport, sock = self.transport, self.sock
        if transport is None or sock is None:
            return
        if self.loop.is_closed():
            sock.close()
        else:
            try:
                self.loop.call_soon_threadsafe(transport.close)
            except RuntimeError:  # the loop closed meanwhile
                sock.close()
