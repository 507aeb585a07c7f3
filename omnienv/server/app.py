"""The server's app: one environment class and a list of route plug-ins in, one ASGI app out.

:func:`assemble` wires the session layer (``/ws``, HTTP sessions, ``/mcp``, health) and mounts
whatever routes its plug-ins add on the same sessions. Which plug-ins a server gets (ORS, NeMo
Gym, the operator routes, the web pages) is decided one layer up, by :func:`omnienv.app.create_app`,
so this package never imports the dialects that provide them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route, WebSocketRoute

from omnienv.core.env import EnvironmentBase
from omnienv.core.threads import to_blocking_thread
from omnienv.server.config import ServerConfig
from omnienv.server.handler import Handler
from omnienv.server.http import http_routes
from omnienv.server.mcp import McpRouter
from omnienv.server.origins import OriginGuard, refuse
from omnienv.server.sessions import EnvFactory, SessionManager
from omnienv.server.websocket import WebSocketEndpoint

__all__ = ["OmniApp", "RoutesPlugin", "assemble"]

RoutesPlugin = Callable[[SessionManager, Handler, Sequence[BaseRoute]], Iterable[BaseRoute]]
"""Adds routes on the server's sessions: ``plugin(manager, handler, routes_so_far)``."""


class OmniApp(Starlette):
    """A Starlette app whose ``/ws`` skips the middleware and router stack.

    Each open WebSocket holds its coroutine stack for the session's lifetime, so going straight
    to the endpoint saves memory per idle session and a few calls per frame; every other route
    (and anything mounted later) goes through Starlette as usual. Every request, ``/ws``
    included, first passes the :class:`~omnienv.server.origins.OriginGuard` (Host, Origin,
    JSON bodies), checked here in the same frame.
    """

    websocket_endpoint: WebSocketEndpoint | None = None
    guard: OriginGuard | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        guard = self.guard
        if guard is not None and scope["type"] != "lifespan" and (refused := guard.refusal(scope)) is not None:
            await refuse(scope, receive, send, refused)
            return
        endpoint = self.websocket_endpoint
        if endpoint is not None and scope["type"] == "websocket" and scope["path"] == "/ws":
            scope["app"] = self
            await endpoint(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


async def _read_tasks(env_class: type[EnvironmentBase]) -> None:
    """The environment's tasks, read off the event loop (:meth:`~omnienv.core.tasks.TaskIndex.load`).
    A split that cannot be read is left: the reset that needs it meets the error and reports it."""
    with contextlib.suppress(Exception):
        await to_blocking_thread(env_class.task_index().load)


def assemble(
    env_class: type[EnvironmentBase],
    config: ServerConfig,
    *,
    env_factory: EnvFactory | None = None,
    plugins: Sequence[RoutesPlugin] = (),
) -> OmniApp:
    """Serve ``env_class`` over ``/ws``, HTTP and ``/mcp``, plus each plug-in's routes.

    ``env_factory`` makes each session's environment elsewhere (``omnienv.ray``). The app's
    ``state.manager`` is the :class:`SessionManager`, for introspection and other routers.
    """
    if not (isinstance(env_class, type) and issubclass(env_class, EnvironmentBase)):
        raise TypeError(f"the server needs an Environment class, got {env_class!r}")
    if config.agent_only and not config.operator_token:
        raise ValueError("an agent-only server needs an operator_token (omnienv.app.create_app makes one)")
    manager = SessionManager(env_class, config, env_factory)
    handler = Handler(manager)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await to_blocking_thread(env_class.preflight)  # a machine that cannot run the env fails here, named
        manager.start()
        reading = asyncio.create_task(_read_tasks(env_class))  # beside serving: it delays no start-up
        try:
            yield
        finally:
            reading.cancel()
            await mcp.sdk.stop()
            await manager.stop()

    endpoint = WebSocketEndpoint(manager, handler)
    handler.mcp = mcp = McpRouter(manager, handler)
    routes: list[BaseRoute] = [
        *http_routes(manager, handler),
        Route("/mcp", mcp),  # a bare ASGI app: OpenEnv's JSON-RPC, or the MCP SDK's streams
        WebSocketRoute("/ws", endpoint),
    ]
    for plugin in plugins:
        routes.extend(plugin(manager, handler, routes))
    app = OmniApp(routes=routes, lifespan=lifespan)
    app.websocket_endpoint = endpoint
    app.guard = app.state.guard = OriginGuard(allow_hosts=config.allow_hosts, allow_origins=config.allow_origins)
    app.state.manager = manager
    app.state.env_class = env_class
    return app
