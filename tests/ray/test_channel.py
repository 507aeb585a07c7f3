"""The direct connection between the front and a host actor (``omnienv.ray.channel``), in-process.

Its two servers and the front's client are tested on 127.0.0.1 without Ray (they import nothing
from it): round trips, batches that fail alone, servers that close or die, and whoever lacks the
secret gets nothing. The connection between real actors is in ``test_channel_actors.py``.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from omnienv.core import EnvironmentFailure
from omnienv.ray import channel as channel_module
from omnienv.ray.channel import (
    HEADER,
    SECRET_BYTES,
    AsyncChannelServer,
    ChannelAddress,
    ChannelClient,
    ChannelLost,
    ChannelUnreachable,
    ThreadChannelServer,
)
from tests.net import free_port
from tests.polling import eventually
from tests.ray.channels import run

Server = ThreadChannelServer | AsyncChannelServer


def reverse(batch: bytes) -> bytes:
    return batch[::-1]


@asynccontextmanager
async def served(kind: str, answer: Callable[[bytes], bytes] = reverse) -> AsyncIterator[Server]:
    """A channel server of ``kind`` on 127.0.0.1, answering with ``answer``."""
    server: Server
    if kind == "thread":
        server = ThreadChannelServer(answer, "127.0.0.1")
    else:

        async def answer_async(batch: bytes) -> bytes:
            return answer(batch)

        server = AsyncChannelServer(answer_async, "127.0.0.1")
        await server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize("kind", ["thread", "async"])
def test_batches_round_trip_and_many_in_flight_each_get_their_own_reply(kind: str) -> None:
    async def scenario() -> None:
        async with served(kind) as server:
            client = ChannelClient(server.address, asyncio.get_running_loop())
            try:
                assert await client.request(b"abc") == b"cba"
                big = bytes(range(256)) * 4096  # 1 MiB: a reply of screenshots
                replies = await asyncio.gather(*(client.request(b"%d" % n + big) for n in range(20)))
                assert replies == [(b"%d" % n + big)[::-1] for n in range(20)]
            finally:
                client.close()

    run(scenario)


def test_an_async_actor_answers_a_quick_batch_before_a_slow_one_sent_first() -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def answer(batch: bytes) -> bytes:
            if batch == b"slow":
                await release.wait()
            return batch.upper()

        server = AsyncChannelServer(answer, "127.0.0.1")
        await server.start()
        client = ChannelClient(server.address, asyncio.get_running_loop())
        try:
            slow = asyncio.ensure_future(client.request(b"slow"))
            while not client.waiting:  # the slow one is written first
                await asyncio.sleep(0.005)
            assert await client.request(b"quick") == b"QUICK"
            assert not slow.done()
            release.set()
            assert await slow == b"SLOW"
        finally:
            client.close()
            server.close()

    run(scenario)


def raw_connection(address: ChannelAddress) -> socket.socket:
    sock = socket.create_connection((address.host, address.port), timeout=10)
    sock.settimeout(10)
    return sock


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


@pytest.mark.parametrize("kind", ["thread", "async"])
def test_without_the_secret_nothing_is_unpickled_and_the_connection_is_closed(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(channel_module, "AUTH_TIMEOUT_S", 0.3)
    answered: list[bytes] = []

    def answer(batch: bytes) -> bytes:
        answered.append(batch)
        return pickle.dumps("answered")

    class Boom:
        def __reduce__(self) -> tuple[object, ...]:
            return (print, ("unpickled!",))

    frame = pickle.dumps(Boom())
    attempts = {
        "wrong secret": bytes(32) + HEADER.pack(1, len(frame)) + frame,
        "a frame first": HEADER.pack(1, len(frame)) + frame + bytes(64),
        "a short secret": b"x",  # then silence: closed after the time allowed
        "nothing": b"",
    }

    async def scenario() -> None:
        async with served(kind, answer) as server:
            for what, sent in attempts.items():
                sock = await asyncio.to_thread(raw_connection, server.address)
                with sock:
                    sock.sendall(sent)
                    assert await asyncio.to_thread(closed_by_peer, sock), what
            assert answered == []
            client = ChannelClient(server.address, asyncio.get_running_loop())  # the secret still opens it
            try:
                assert pickle.loads(await client.request(b"fine")) == "answered"
            finally:
                client.close()

    run(scenario)
    assert answered == [b"fine"]


@pytest.mark.parametrize("kind", ["thread", "async"])
def test_a_secret_dripped_a_byte_at_a_time_gets_no_longer_than_the_time_allowed(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(channel_module, "AUTH_TIMEOUT_S", 0.3)

    def drip(address: ChannelAddress) -> int:
        """Bytes of the right secret sent, one each 50 ms, before the server hung up."""
        secret = bytes.fromhex(address.secret)
        with raw_connection(address) as sock:
            for sent, byte in enumerate(secret):
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    return sent
                time.sleep(0.05)
            return len(secret) if not closed_by_peer(sock) else -1

    async def scenario() -> None:
        async with served(kind) as server:
            sent = await asyncio.to_thread(drip, server.address)
            assert 0 < sent < SECRET_BYTES or sent == -1, sent

    run(scenario)


def serving_threads() -> int:
    """Threads serving a connection (an earlier test's may still be ending, never starting)."""
    return sum(thread.name == "omnienv-channel-conn" for thread in threading.enumerate())


@pytest.mark.parametrize("kind", ["thread", "async"])
def test_a_flood_of_silent_connections_costs_no_thread_and_the_front_is_still_served(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(channel_module, "AUTH_TIMEOUT_S", 2.0)
    silent: list[socket.socket] = []

    async def scenario() -> None:
        async with served(kind) as server:
            threads = serving_threads()
            try:
                for _ in range(200):
                    silent.append(await asyncio.to_thread(raw_connection, server.address))
                assert serving_threads() <= threads
                client = ChannelClient(server.address, asyncio.get_running_loop())
                try:
                    assert await client.request(b"abc") == b"cba"
                finally:
                    client.close()
                # each silent one is closed once its time is up
                assert all(await asyncio.gather(*(asyncio.to_thread(closed_by_peer, s) for s in silent[:20])))
            finally:
                for sock in silent:
                    sock.close()

    run(scenario)


def test_a_thread_server_closed_before_its_thread_runs_ends_it_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    go = threading.Event()
    accept = ThreadChannelServer._accept

    def late(self: ThreadChannelServer) -> None:
        go.wait(10)
        accept(self)

    monkeypatch.setattr(ThreadChannelServer, "_accept", late)
    server = ThreadChannelServer(reverse, "127.0.0.1")
    server.close()
    go.set()
    server.accepting.join(10)
    assert not server.accepting.is_alive()
    assert server._wake_reader.fileno() == -1  # it ran to its end and let go of what it held


def test_closing_a_thread_server_ends_its_accepting_thread_and_drops_those_pending() -> None:
    server = ThreadChannelServer(reverse, "127.0.0.1")
    with raw_connection(server.address) as pending:
        eventually(lambda: server.accepting.is_alive())
        server.close()
        server.close()  # twice is fine
        eventually(lambda: not server.accepting.is_alive(), what="the accepting thread ended")
        assert closed_by_peer(pending)
    with pytest.raises(OSError):
        raw_connection(server.address)


@pytest.mark.parametrize("kind", ["thread", "async"])
def test_a_batch_the_actor_cannot_answer_fails_alone_and_the_actor_goes_on(kind: str) -> None:
    def answer(batch: bytes) -> bytes:
        if batch == b"bad":
            raise ValueError("cannot read this batch")
        return batch

    async def scenario() -> None:
        async with served(kind, answer) as server:
            client = ChannelClient(server.address, asyncio.get_running_loop())
            try:
                failure = pickle.loads(await client.request(b"bad"))
                assert isinstance(failure, EnvironmentFailure)
                assert "ValueError: cannot read this batch" in str(failure)
                assert await client.request(b"good") == b"good"
            finally:
                client.close()

    run(scenario)


def test_the_secret_stays_out_of_the_address_repr() -> None:
    address = ChannelAddress("127.0.0.1", 1234, "ab" * 32)
    assert "ab" * 4 not in repr(address) and "1234" in repr(address)


SERVER_PROCESS = """
import asyncio, json, sys, time
from omnienv.ray.channel import AsyncChannelServer, ThreadChannelServer

def answer(batch):
    time.sleep(60)  # never answers: the process is killed first
    return batch

async def answer_async(batch):
    await asyncio.sleep(60)
    return batch

def announce(server):
    print(json.dumps([server.address.port, server.address.secret]), flush=True)

if sys.argv[1] == "thread":
    announce(ThreadChannelServer(answer, "127.0.0.1"))
    time.sleep(120)
else:
    async def main():
        server = AsyncChannelServer(answer_async, "127.0.0.1")
        await server.start()
        announce(server)
        await asyncio.sleep(120)
    asyncio.run(main())
"""


@pytest.mark.parametrize("kind", ["thread", "async"])
def test_a_killed_servers_connection_fails_the_calls_in_flight_and_every_later_one(kind: str) -> None:
    process = subprocess.Popen([sys.executable, "-c", SERVER_PROCESS, kind], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        port, secret = json.loads(process.stdout.readline())

        async def scenario() -> None:
            client = ChannelClient(ChannelAddress("127.0.0.1", port, secret), asyncio.get_running_loop())
            try:
                pending = asyncio.ensure_future(client.request(b"never answered"))
                deadline = asyncio.get_running_loop().time() + 10
                while not client.waiting:  # connected, and the request written
                    assert asyncio.get_running_loop().time() < deadline and not pending.done(), pending
                    await asyncio.sleep(0.005)
                process.kill()  # as when an actor dies: the kernel closes its sockets
                with pytest.raises(ChannelLost, match="broke"):
                    await pending
                with pytest.raises(ChannelLost):
                    await client.request(b"later")
            finally:
                client.close()

        run(scenario)
    finally:
        process.kill()
        process.wait(10)


def test_no_listener_is_unreachable_and_nothing_was_sent() -> None:
    async def scenario() -> None:
        client = ChannelClient(ChannelAddress("127.0.0.1", free_port(), "00" * 32), asyncio.get_running_loop())
        with pytest.raises(ChannelUnreachable, match="cannot connect"):
            await client.request(b"x")

    run(scenario)


@pytest.mark.parametrize("kind", ["thread", "async"])
def test_both_ends_give_up_a_silent_peer_after_about_twenty_seconds(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/ray.md: keepalive probes after 10 s of silence give up about 10 s later (5 probes, 2 s
    apart), and data left unanswered for 20 s ends the connection (``TCP_USER_TIMEOUT``)."""
    tuned: list[dict[str, int]] = []
    tune = channel_module._tune

    def recorded(sock: socket.socket) -> None:
        tune(sock)
        options = [(socket.SOL_SOCKET, "SO_KEEPALIVE"), (socket.IPPROTO_TCP, "TCP_NODELAY")]
        options += [(socket.IPPROTO_TCP, name) for name in ("TCP_KEEPIDLE", "TCP_KEEPINTVL", "TCP_KEEPCNT")]
        options.append((socket.IPPROTO_TCP, "TCP_USER_TIMEOUT"))
        tuned.append({name: sock.getsockopt(level, getattr(socket, name)) for level, name in options})

    monkeypatch.setattr(channel_module, "_tune", recorded)

    async def scenario() -> None:
        async with served(kind) as server:
            client = ChannelClient(server.address, asyncio.get_running_loop())
            try:
                assert await client.request(b"abc") == b"cba"
            finally:
                client.close()

    run(scenario)
    expected = {"TCP_KEEPIDLE": 10, "TCP_KEEPINTVL": 2, "TCP_KEEPCNT": 5, "TCP_USER_TIMEOUT": 20_000}
    assert len(tuned) == 2, tuned  # the front's end and the actor's
    for options in tuned:
        assert options["SO_KEEPALIVE"] and options["TCP_NODELAY"] and options == {**options, **expected}, options
