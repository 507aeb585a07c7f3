"""``/mcp``: OpenEnv's JSON-RPC session methods and the standard MCP transport, on one path.

OpenEnv's methods (``openenv/session/create|close``, and ``tools/list|call`` without an MCP
session) are answered here, as OpenEnv 0.10.0's ``MCPToolClient`` uses them (it creates a
session here, attaches ``/ws?session_id=`` for reset/step, and calls tools here); they also
arrive in ``{"type": "mcp"}`` frames on ``/ws``. Everything else of the MCP streamable HTTP
transport (``initialize``, requests carrying an ``mcp-session-id`` header, GET, DELETE) goes to
the official SDK through :class:`~omnienv.server.mcp_sdk.McpSdkBridge`. A tool call still goes
through the environment's ``step``: every call is counted, limited and validated.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from starlette.requests import Request as HTTPRequest
from starlette.responses import Response

from omnienv.core.errors import OmniEnvError
from omnienv.core.types import StepResult, ToolCall
from omnienv.protocol.codec import encode
from omnienv.protocol.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
    RpcRequest,
    error_response,
    parse_rpc,
    rpc_error_for,
    success,
)
from omnienv.protocol.messages import step_reply
from omnienv.server.handler import Handler
from omnienv.server.mcp_sdk import McpSdkBridge
from omnienv.server.sessions import OPENENV, Session, SessionManager

__all__ = ["McpRouter"]

logger = logging.getLogger("omnienv.server")


class McpRouter:
    """Answers OpenEnv's JSON-RPC itself and hands the MCP transport to the SDK bridge.

    Mounted as a bare ASGI app (``__call__``) so SDK responses can stream (SSE).
    """

    def __init__(self, manager: SessionManager, handler: Handler) -> None:
        self.manager = manager
        self.handler = handler
        self.sdk = McpSdkBridge(manager, handler)
        self.tools = [
            {"name": spec.name, "description": spec.description, "inputSchema": spec.parameters}
            for spec in manager.env_class.tools.values()
        ]

    async def handle(self, raw: bytes | dict[str, Any], ws_session: Session | None = None) -> dict[str, Any]:
        """One JSON-RPC response for one request; never raises."""
        try:
            request = parse_rpc(raw)
        except RpcError as exc:
            return error_response(exc)
        try:
            return success(await self._dispatch(request, ws_session), request.id)
        except RpcError as exc:
            return error_response(exc, request.id)
        except OmniEnvError as exc:
            return error_response(rpc_error_for(exc), request.id)
        except Exception as exc:
            logger.error("JSON-RPC %s failed", request.method, exc_info=exc)
            return error_response(RpcError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"), request.id)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        method = scope["method"]
        if method != "POST":
            if method in ("GET", "DELETE"):
                await self.sdk.handle(scope, receive, send, None, initialize=False)
            else:
                await Response("Method Not Allowed", 405, headers={"Allow": "GET, POST, DELETE"})(scope, receive, send)
            return
        request = HTTPRequest(scope, receive)
        limit = self.manager.config.max_message_bytes
        raw = await request.body()
        if len(raw) <= limit and raw.strip():
            route = _route(raw, any(key == b"mcp-session-id" for key, _ in scope.get("headers", ())))
            if route != "openenv":
                await self.sdk.handle(scope, receive, send, raw, initialize=route == "initialize")
                return
        await (await self._reply(raw))(scope, receive, send)

    async def endpoint(self, request: HTTPRequest) -> Response:
        """``POST /mcp`` for OpenEnv's JSON-RPC only."""
        return await self._reply(await request.body())

    async def _reply(self, raw: bytes) -> Response:
        """``POST /mcp``: always HTTP 200, errors in the JSON-RPC body, as OpenEnv does."""
        limit = self.manager.config.max_message_bytes
        if len(raw) > limit:
            reply = error_response(RpcError(INVALID_REQUEST, f"request of {len(raw):,} bytes exceeds {limit:,}"))
        elif not raw.strip():
            reply = error_response(RpcError(PARSE_ERROR, "Parse error"))
        else:
            reply = await self.handle(raw)
        return Response(encode(reply), media_type="application/json")

    async def _dispatch(self, request: RpcRequest, ws_session: Session | None) -> Any:
        params = request.params
        method = request.method
        if method != "tools/list":
            self.handler.refuse_agents(f"'{method}' over OpenEnv's JSON-RPC")
        if method == "openenv/session/create":
            session = ws_session or await self.manager.open(owned=False, family=OPENENV)
            return {"session_id": session.id}
        if method == "openenv/session/close":
            return await self._close(params.get("session_id"), ws_session)
        if method == "tools/list":
            self._session(params, ws_session)
            return {"tools": self.tools}
        if method == "tools/call":
            return await self._call(params, ws_session)
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def _session(self, params: dict[str, Any], ws_session: Session | None) -> Session | None:
        if ws_session is not None:
            return ws_session
        session_id = params.get("session_id")
        if not session_id:
            return None
        session = self.manager.find(str(session_id), OPENENV)
        if session is None:
            raise RpcError(INVALID_PARAMS, f"Unknown session_id: {session_id}")
        return session

    async def _close(self, session_id: Any, ws_session: Session | None) -> dict[str, Any]:
        if not session_id:
            raise RpcError(INVALID_PARAMS, "Invalid params - 'session_id' is required")
        if ws_session is not None and session_id == ws_session.id:
            raise RpcError(INVALID_REQUEST, "Cannot close active WebSocket-managed session via MCP method")
        session = self.manager.find(str(session_id), OPENENV)
        if session is None:
            raise RpcError(INVALID_PARAMS, f"Unknown session_id: {session_id}")
        closed = await self.manager.request_close(session)
        return {"session_id": session.id, "closed": closed, "closing": not closed}

    async def _call(self, params: dict[str, Any], ws_session: Session | None) -> Any:
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise RpcError(INVALID_PARAMS, "Invalid params - 'name' must name the tool to call")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, f"Invalid params - 'arguments' of '{name}' must be an object")
        call = ToolCall(name, arguments)
        session = self._session(params, ws_session)
        if session is not None:
            result = await self.handler.run(session, call)
            assert isinstance(result, StepResult)
            return step_reply(name, result)["observation"]["result"]
        async with self.manager.scratch() as env:  # no session: a throw-away environment, as OpenEnv does
            await env.reset()
            result = await env.step(call)
        return step_reply(name, result)["observation"]["result"]


def _route(raw: bytes, has_session_header: bool) -> str:
    """``"openenv"`` (answered here), ``"initialize"`` (opens an MCP session) or ``"sdk"``."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "sdk" if has_session_header else "openenv"
    if not isinstance(body, dict):  # batches: the SDK's when in an MCP session
        return "sdk" if has_session_header else "openenv"
    method = body.get("method")
    params = body.get("params")
    if isinstance(method, str) and (
        method.startswith("openenv/")
        or (method.startswith("tools/") and isinstance(params, dict) and "session_id" in params)
    ):
        return "openenv"
    if has_session_header:
        return "sdk"
    return "initialize" if method == "initialize" else "openenv"
