"""The servers the WebSocket benchmarks compare, each started as its own process.

- ``omnienv``: ``omnienv serve wordle``;
- ``omnienv-echo``: ``omnienv serve echo``, an environment whose one tool repeats its argument:
  omnienv's own work on a step, with next to no game;
- ``openenv-mcp`` and ``openenv-plain``: the same game written for OpenEnv 0.10.0
  (``benchmarks/openenv_wordle``), run in OpenEnv's own virtualenv (built when missing);
- ``echo``: a bare Starlette WebSocket endpoint on uvicorn that sends every text frame straight
  back, permessage-deflate off: the stack's limit for an ASGI app. This file runs it when run as a
  script.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._harness import OMNIENV, OPENENV_PYTHON, ServerProcess, free_port

__all__ = ["SERVERS", "benchmark_server", "serve_echo"]

SERVERS = ("omnienv", "omnienv-echo", "openenv-mcp", "openenv-plain", "echo")


def benchmark_server(name: str, max_sessions: int, cpu: int | None = None, *omnienv_options: str) -> ServerProcess:
    """Server ``name`` of :data:`SERVERS`, to be pinned to ``cpu``; ``omnienv_options`` are more
    options of ``omnienv serve``."""
    if name in ("omnienv", "omnienv-echo"):
        port = free_port()
        env = "wordle" if name == "omnienv" else "echo"
        cmd = [OMNIENV, "serve", env, "--host", "127.0.0.1", "--port", str(port)]
        return ServerProcess(name, [*cmd, "--max-sessions", str(max_sessions), *omnienv_options], port, cpu)
    if name in ("openenv-mcp", "openenv-plain"):
        if not OPENENV_PYTHON.exists():
            from tests.peerenv import peer_python

            peer_python("openenv")
        variant = name.split("-", 1)[1]
        cmd = [str(OPENENV_PYTHON), "-m", "benchmarks.openenv_wordle.server", "--variant", variant, "--port", "0"]
        return ServerProcess(name, [*cmd, "--max-sessions", str(max_sessions)], 0, cpu)
    if name == "echo":
        return ServerProcess(name, [sys.executable, str(Path(__file__).resolve())], 0, cpu)
    raise SystemExit(f"unknown server {name!r}; choose from {', '.join(SERVERS)}")


def serve_echo() -> None:
    """Bind a free port, print ``PORT n`` (as :class:`ServerProcess` expects) and serve."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route, WebSocketRoute
    from starlette.websockets import WebSocket, WebSocketDisconnect

    async def echo(ws: WebSocket) -> None:
        await ws.accept()
        try:
            while True:
                await ws.send_text(await ws.receive_text())
        except WebSocketDisconnect:
            pass

    async def health(request: Any) -> JSONResponse:
        return JSONResponse({"status": "healthy"})

    app = Starlette(routes=[Route("/health", health), WebSocketRoute("/ws", echo)])
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", backlog=4096, ws_per_message_deflate=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    serve_echo()
