"""``create_app``: one environment class in, one ASGI app out (Starlette, any ASGI server)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route, WebSocketRoute

from omnienv.core.env import EnvironmentBase
from omnienv.core.registry import load_environment
from omnienv.server.config import ServerConfig
from omnienv.server.handler import Handler
from omnienv.server.http import http_routes
from omnienv.server.mcp import McpRouter
from omnienv.server.origins import OriginGuard, refuse
from omnienv.server.sessions import EnvFactory, SessionManager
from omnienv.server.websocket import WebSocketEndpoint

__all__ = ["OmniApp", "create_app"]


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


def create_app(
    env: type[EnvironmentBase] | str,
    config: ServerConfig | None = None,
    *,
    env_factory: EnvFactory | None = None,
    **overrides: Any,
) -> OmniApp:
    """Serve ``env`` (a class or a registered name) over ``/ws`` and HTTP.

    ``overrides`` set single :class:`ServerConfig` fields, e.g. ``max_sessions=64``.
    ``env_factory`` makes each session's environment elsewhere (``omnienv.ray``). The app's
    ``state.manager`` is the :class:`SessionManager`, for introspection and other routers.
    """
    env_class = load_environment(env) if isinstance(env, str) else env
    if not (isinstance(env_class, type) and issubclass(env_class, EnvironmentBase)):
        raise TypeError(f"create_app needs an Environment class or name, got {env!r}")
    config = replace(config or ServerConfig(), **overrides)
    if config.agent_only and not config.operator_token:
        config = replace(config, operator_token=secrets.token_urlsafe(24))
    manager = SessionManager(env_class, config, env_factory)
    handler = Handler(manager)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await asyncio.to_thread(env_class.preflight)  # a machine that cannot run the env fails here, named
        manager.start()
        try:
            yield
        finally:
            await mcp.sdk.stop()
            await manager.stop()

    endpoint = WebSocketEndpoint(manager, handler)
    handler.mcp = mcp = McpRouter(manager, handler)
    routes = [
        *http_routes(manager, handler),
        Route("/mcp", mcp),  # a bare ASGI app: OpenEnv's JSON-RPC, or the MCP SDK's streams
        WebSocketRoute("/ws", endpoint),
    ]
    if config.ui:
        from omnienv.ui.routes import ui_routes  # static files only: no server layers below it

        routes.extend(ui_routes())
    if config.agent_only:  # episodes are the operator's; the training dialects stay off
        from omnienv.server.operator import operator_routes

        routes.extend(operator_routes(manager, handler))
    else:
        from omnienv.dialects.nemo_gym import nemo_routes  # ORS and NeMo Gym routers, on the same sessions
        from omnienv.dialects.ors import ors_routes

        routes.extend(ors_routes(manager))
        routes.extend(nemo_routes(manager, taken=routes))
    app = OmniApp(routes=routes, lifespan=lifespan)
    app.websocket_endpoint = endpoint
    app.guard = app.state.guard = OriginGuard(allow_hosts=config.allow_hosts, allow_origins=config.allow_origins)
    app.state.manager = manager
    app.state.env_class = env_class
    return app
