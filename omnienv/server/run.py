"""Running the app on uvicorn (uvloop and httptools when installed): blocking, or in a thread.

``running()`` is for tests, benchmarks and notebooks: it binds port 0 (the OS picks a free
port, so there is no race), waits for start-up with a deadline, and always shuts down.

Start-up counts until ``/health`` answers, so what only a WebSocket needs (uvicorn's
``websockets`` protocol, 10 ms of imports) is imported in a background thread once the
sockets listen (:class:`Server`), or by the first upgrade if that comes sooner.

Every session holds at least one open file (its connection), and many systems start a process
with a soft limit of 1024 open files: past it, ``accept`` fails and clients wait unanswered, long
before ``max_sessions``. A server raises its soft limit to the hard one at start-up
(:func:`make_room_for_sessions`, built on :mod:`omnienv.core.open_files`), and names the fix when
even the hard one is too low.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import resource
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import uvicorn

from omnienv.core.open_files import make_room_for_files
from omnienv.server.config import ServerConfig
from omnienv.server.lean import forget_handshake

__all__ = ["Server", "forget_handshake", "make_room_for_sessions", "running", "serve", "uvicorn_config"]

logger = logging.getLogger("omnienv.server")
SPARE_FILES = 256
"""Open files a server needs besides its sessions' connections (listening sockets, logs, imports)."""


def _server_config(app: Any) -> ServerConfig:
    manager = getattr(getattr(app, "state", None), "manager", None)  # any ASGI app may be run
    return manager.config if manager is not None else ServerConfig()


def make_room_for_sessions(sessions: int) -> int:
    """Raise this process's soft open-file limit (:func:`~omnienv.core.open_files.make_room_for_files`),
    and warn, naming the fix, when even that holds fewer than ``sessions`` connections. Returns
    the soft limit."""
    wanted = sessions + SPARE_FILES
    soft = make_room_for_files(wanted)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        logger.warning(
            "the open-file limit (%d) holds about %d sessions, fewer than max_sessions (%d): "
            "raise the hard limit (ulimit -Hn, or LimitNOFILE= under systemd) or lower --max-sessions",
            soft,
            max(0, soft - SPARE_FILES),
            sessions,
        )
    return soft


def uvicorn_config(app: Any, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> uvicorn.Config:
    """uvicorn settings matching the app's :class:`ServerConfig` (pings, frame limit)."""
    config = _server_config(app)
    guard = getattr(getattr(app, "state", None), "guard", None)
    if guard is not None:  # the name the server is bound to is a valid Host (a wildcard address is not)
        guard.bind(host)
    settings: dict[str, Any] = {
        "loop": "auto",
        "http": "auto",
        "ws": _websocket_protocol if importlib.util.find_spec("websockets") is not None else "auto",
        "ws_ping_interval": config.ws_ping_interval,
        "ws_ping_timeout": config.ws_ping_timeout,
        "ws_per_message_deflate": config.ws_compression,
        # Frames up to 4x our own limit reach the app and get a MESSAGE_TOO_LARGE error frame;
        # only beyond that does uvicorn close the connection (1009).
        "ws_max_size": config.max_message_bytes * 4,
        "log_level": "warning",
        "lifespan": "on",
        "backlog": 4096,
        "timeout_graceful_shutdown": 5,
    }
    settings.update(options)
    return uvicorn.Config(app, host=host, port=port, **settings)


@cache
def _websocket_protocol_class() -> Callable[..., asyncio.Protocol]:
    from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol

    assert AutoWebSocketsProtocol is not None  # chosen only when websockets is installed
    try:
        from omnienv.server.answering import AnsweringProtocol
    except ImportError:  # a uvicorn without its sans-I/O WebSocket protocol: every frame goes to the app
        return AutoWebSocketsProtocol
    return AnsweringProtocol if AutoWebSocketsProtocol in AnsweringProtocol.__mro__ else AutoWebSocketsProtocol


def _websocket_protocol(**options: Any) -> asyncio.Protocol:
    """What uvicorn's ``ws="auto"`` makes for each upgrade, imported on first use; with its
    sans-I/O protocol, :class:`~omnienv.server.answering.AnsweringProtocol`."""
    return _websocket_protocol_class()(**options)


class Server(uvicorn.Server):
    """uvicorn's server that, once its sockets listen, runs ``after_start`` and imports what
    WebSockets need in a background thread, off the path of the first requests."""

    def __init__(self, config: uvicorn.Config, after_start: Callable[[int], object] | None = None) -> None:
        super().__init__(config)
        self.after_start = after_start

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        make_room_for_sessions(_server_config(self.config.app).max_sessions)
        await super().startup(sockets)
        if self.started:
            threading.Thread(target=self._warm_up, name="omnienv-warm-up", daemon=True).start()

    def _warm_up(self) -> None:
        if self.config.ws is _websocket_protocol:
            _websocket_protocol_class()
        if self.after_start is not None:
            self.after_start(self.bound_port())

    def bound_port(self) -> int:
        """The port the server listens on: the one the system chose, for ``--port 0``."""
        for server in self.servers:
            for sock in server.sockets:
                return int(sock.getsockname()[1])
        return int(self.config.port)


def serve(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    after_start: Callable[[int], object] | None = None,
    **options: Any,
) -> None:
    """Serve until interrupted; ``after_start(port)`` runs in a thread once the server answers on
    ``port`` (the one it got, for port 0)."""
    Server(uvicorn_config(app, host, port, **options), after_start).run()


def _run_in_thread(server: uvicorn.Server) -> None:
    with contextlib.suppress(SystemExit):  # uvicorn exits when start-up fails; its log says why
        server.run()


@contextmanager
def running(app: Any, host: str = "127.0.0.1", *, timeout: float = 10.0, **options: Any) -> Iterator[str]:
    """Serve ``app`` in a background thread on a free port; yields its ``http://`` base URL."""
    server = Server(uvicorn_config(app, host, 0, **options))
    thread = threading.Thread(target=_run_in_thread, args=(server,), name="omnienv-server", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the server failed to start: its log above says why")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start within {timeout:g} s")
            time.sleep(0.005)
        yield f"http://{host}:{server.bound_port()}"
    finally:
        server.should_exit = True
        thread.join(timeout + 10)
