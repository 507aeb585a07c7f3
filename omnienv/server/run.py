"""Running the app on uvicorn (uvloop and httptools when installed): blocking, or in a thread.

``running()`` is for tests, benchmarks and notebooks: it binds port 0 (the OS picks a free
port, so there is no race), waits for start-up with a deadline, and always shuts down.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from omnienv.server.config import ServerConfig

__all__ = ["forget_handshake", "running", "serve", "uvicorn_config"]


def uvicorn_config(app: Any, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> uvicorn.Config:
    """uvicorn settings matching the app's :class:`ServerConfig` (pings, frame limit)."""
    state = getattr(app, "state", None)  # any ASGI app may be run
    manager = getattr(state, "manager", None)
    config: ServerConfig = manager.config if manager is not None else ServerConfig()
    guard = getattr(state, "guard", None)
    if guard is not None:  # the name the server is bound to is a valid Host (a wildcard address is not)
        guard.bind(host)
    settings: dict[str, Any] = {
        "loop": "auto",
        "http": "auto",
        "ws": "auto",
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


def forget_handshake(send: Any) -> None:
    """Let uvicorn's WebSocket connection drop the handshake it keeps after accepting.

    Its ``websockets`` protocol holds the upgrade request and the 101 response (their headers,
    about 2 KB) for the connection's whole life, though nothing reads them once the accept is
    sent; with ten thousand idle sessions that is 20 MB. ``send`` is the connection's own ASGI
    ``send``; for any other server (or a uvicorn that changed) this does nothing.
    """
    connection: Any = getattr(send, "__self__", None)
    if type(connection).__name__ == "WebSocketsSansIOProtocol" and getattr(connection, "handshake_complete", False):
        connection.request = connection.response = None


def serve(app: Any, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
    """Serve until interrupted."""
    uvicorn.Server(uvicorn_config(app, host, port, **options)).run()


def _run_in_thread(server: uvicorn.Server) -> None:
    with contextlib.suppress(SystemExit):  # uvicorn exits when start-up fails; its log says why
        server.run()


@contextmanager
def running(app: Any, host: str = "127.0.0.1", *, timeout: float = 10.0, **options: Any) -> Iterator[str]:
    """Serve ``app`` in a background thread on a free port; yields its ``http://`` base URL."""
    server = uvicorn.Server(uvicorn_config(app, host, 0, **options))
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
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout + 10)
