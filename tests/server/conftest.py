"""Real servers on 127.0.0.1 (uvicorn in a thread, port 0), tiny inline environments, polling."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

from omnienv.app import create_app
from omnienv.core import AsyncEnvironment, Environment, Task, ToolResult, tool
from omnienv.server import SessionManager, running

RELEASE = threading.Event()
"""Set to let every blocked ``Hang.hang`` call return (tests set it in a finally)."""


class Hang(Environment):
    """A blocking environment whose ``hang`` tool never returns on its own."""

    max_turns = 50

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "ready"

    @tool
    def hang(self) -> str:
        """Block until the test releases it."""
        RELEASE.wait(60)
        return "released"

    @tool
    def ping(self) -> str:
        """Answer at once."""
        return "pong"


class AsyncHang(AsyncEnvironment):
    """An async environment whose ``hang`` tool awaits forever."""

    async def setup(self, task: Task | None, rng: random.Random) -> str:
        return "ready"

    @tool
    async def hang(self) -> str:
        """Await forever."""
        await asyncio.sleep(3600)
        return "never"

    @tool
    async def ping(self) -> str:
        """Answer at once."""
        return "pong"


class Crash(Environment):
    """A tool that crashes: an infrastructure failure, flagged on the episode."""

    blocking = False

    @tool
    def boom(self) -> str:
        """Raise."""
        raise RuntimeError("kaboom")


class NotJson(Environment):
    """A tool whose result JSON cannot hold (a set in its info), on the inline path or not."""

    @tool
    def visited(self) -> ToolResult:
        """Return a set."""
        return ToolResult.of("ok", info={"cells": {1, 2}})


class NotJsonInline(NotJson):
    blocking = False


class BrokenInit(Environment):
    """Cannot even be built."""

    def __init__(self) -> None:
        raise OSError("no sandbox available")

    @tool
    def noop(self) -> str:
        """Do nothing."""
        return ""


@dataclass
class Served:
    """A running server; unpacks as ``url, manager``. ``stop()`` shuts it down early."""

    url: str
    manager: SessionManager
    stop: Callable[[], None]

    def __iter__(self) -> Iterator[Any]:
        return iter((self.url, self.manager))


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    """``serve(env, **config) -> Served``; every server stops at test end, even on failure."""
    with ExitStack() as stack:

        def start(env: Any = "wordle", **config: Any) -> Served:
            app = create_app(env, **config)
            own = ExitStack()
            stack.callback(own.close)
            url = own.enter_context(running(app))
            return Served(url, app.state.manager, own.close)

        try:
            yield start
        finally:
            RELEASE.set()  # unblock hung tools before the servers shut down
    RELEASE.clear()


@contextmanager
def ws(url: str, query: str = "") -> Iterator[ClientConnection]:
    target = url.replace("http://", "ws://") + "/ws" + query
    with ws_connect(target, proxy=None, compression=None, open_timeout=5, close_timeout=2) as connection:
        yield connection


def on_loop(manager: SessionManager, coroutine_fn: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Run a coroutine on the server's own event loop (for introspection)."""
    assert manager.loop is not None
    return asyncio.run_coroutine_threadsafe(coroutine_fn(), manager.loop).result(timeout)
