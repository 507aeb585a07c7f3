"""``/operator``: who starts episodes on an agent-only server.

On an agent-only server agents hold MCP sessions and see only tools; reset, step and state are
refused on every other route. The operator (the process that runs the evaluation) starts and
inspects episodes here, with the bearer token the server was given or printed at start-up::

    POST   /operator/sessions                 {"task_id"?, "split"?, "seed"?} -> session_id, mcp_path
    POST   /operator/sessions/{id}/reset      the same body: start another episode in that session
    GET    /operator/sessions/{id}/state      the infrastructure's view (step count, done...)
    POST   /operator/sessions/{id}/end        end the episode now and score it (the evaluation's cut)
    DELETE /operator/sessions/{id}

The agent then connects its MCP client to ``mcp_path`` (``/mcp?session_id=...``).
"""

from __future__ import annotations

import functools
import hmac
from typing import Any

from starlette.requests import Request as HTTPRequest
from starlette.responses import Response
from starlette.routing import Route

from omnienv.core.errors import AgentOnlyError, OmniEnvError
from omnienv.protocol.codec import encode
from omnienv.protocol.codes import error_data
from omnienv.protocol.messages import End, GetState, Request, parse_reset
from omnienv.server.handler import Handler, openenv_reply, unexpected
from omnienv.server.http import read_json
from omnienv.server.sessions import OPERATOR, Session, SessionManager

__all__ = ["operator_routes"]


def _json(value: Any, status: int = 200) -> Response:
    return Response(encode(value), status, media_type="application/json")


def operator_routes(manager: SessionManager, handler: Handler) -> list[Route]:
    token = manager.config.operator_token
    assert token, "create_app sets an operator token in agent-only mode"
    expected = f"Bearer {token}".encode()
    limit = manager.config.max_message_bytes

    def guarded(endpoint: Any) -> Any:
        @functools.wraps(endpoint)
        async def run(request: HTTPRequest) -> Response:
            from omnienv.server.http import status_of

            try:
                given = request.headers.get("authorization", "").encode()
                if not hmac.compare_digest(given, expected):
                    refused = AgentOnlyError(
                        "the operator routes need 'Authorization: Bearer <token>' with the "
                        "token the server printed at start-up (ServerConfig.operator_token)"
                    )
                    return _json({"type": "error", "data": error_data(refused)}, 401)
                response: Response = await endpoint(request)
                return response
            except OmniEnvError as exc:
                return _json({"type": "error", "data": error_data(exc)}, status_of(exc))
            except Exception as exc:
                return _json({"type": "error", "data": error_data(unexpected(exc))}, 500)

        return run

    async def run(session: Session, request: Request) -> tuple[str, dict[str, Any]]:
        return openenv_reply(handler, session, request, await handler.run(session, request, trusted=True))

    async def body(request: HTTPRequest) -> Any:
        return await read_json(request, limit)

    async def open_session(request: HTTPRequest) -> Response:
        reset = parse_reset(await body(request))
        session = await manager.open(owned=False, family=OPERATOR)
        try:
            kind, data = await run(session, reset)
        except BaseException:
            await manager.close(session)
            raise
        return _json(
            {"session_id": session.id, "mcp_path": f"/mcp?session_id={session.id}", "type": kind, "data": data}, 201
        )

    async def reset_session(request: HTTPRequest) -> Response:
        session = manager.get(request.path_params["session_id"], OPERATOR)
        kind, data = await run(session, parse_reset(await body(request)))
        return _json({"type": kind, "data": data})

    async def session_state(request: HTTPRequest) -> Response:
        session = manager.get(request.path_params["session_id"], OPERATOR)
        kind, data = await run(session, GetState())
        return _json({"type": kind, "data": data})

    async def end_episode(request: HTTPRequest) -> Response:
        session = manager.get(request.path_params["session_id"], OPERATOR)
        kind, data = await run(session, End())
        return _json({"type": kind, "data": data})

    async def close_session(request: HTTPRequest) -> Response:
        session = manager.get(request.path_params["session_id"], OPERATOR)
        closed = await manager.request_close(session)  # an agent still playing: closed when it leaves
        return _json({"session_id": session.id, "closed": closed, "closing": not closed})

    return [
        Route("/operator/sessions", guarded(open_session), methods=["POST"]),
        Route("/operator/sessions/{session_id}/reset", guarded(reset_session), methods=["POST"]),
        Route("/operator/sessions/{session_id}/state", guarded(session_state), methods=["GET"]),
        Route("/operator/sessions/{session_id}/end", guarded(end_episode), methods=["POST"]),
        Route("/operator/sessions/{session_id}", guarded(close_session), methods=["DELETE"]),
    ]
