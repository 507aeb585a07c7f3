"""HTTP routes: health and metadata, tasks, our stateful sessions, and OpenEnv's stateless trio.

Session routes speak the WebSocket protocol's frames (``{"type", "data"}``) so one decoder reads
both transports; errors carry the same codes, with a matching HTTP status.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request as HTTPRequest
from starlette.responses import Response
from starlette.routing import Route

from omnienv.core.errors import (
    AgentOnlyError,
    CapacityError,
    EnvironmentFailure,
    MessageTooLargeError,
    MessageValidationError,
    OmniEnvError,
    ProtocolError,
    SessionError,
    SessionNotFoundError,
    StepTimeoutError,
    TaskError,
    UsageError,
)
from omnienv.core.types import ToolCall
from omnienv.protocol.codec import decode, encode
from omnienv.protocol.codes import error_data
from omnienv.protocol.messages import End, GetState, Request, parse_action, parse_reset, reset_reply, step_reply
from omnienv.server.handler import Handler, openenv_reply, unexpected
from omnienv.server.origins import OriginRefusedError, UnsupportedMediaTypeError
from omnienv.server.schemas import openapi, schema
from omnienv.server.sessions import OPENENV, Session, SessionManager

__all__ = ["http_routes", "read_json", "read_json_object", "status_of"]

_STATE, _END = GetState(), End()

Endpoint = Callable[[HTTPRequest], Awaitable[Response]]
_STATUS: tuple[tuple[type[OmniEnvError], int], ...] = (
    (AgentOnlyError, 403),
    (OriginRefusedError, 403),
    (UnsupportedMediaTypeError, 415),
    (CapacityError, 503),
    (SessionNotFoundError, 404),
    (SessionError, 409),
    (MessageTooLargeError, 413),
    (MessageValidationError, 422),
    (ProtocolError, 400),
    (TaskError, 404),
    (UsageError, 409),
    (StepTimeoutError, 504),
    (EnvironmentFailure, 500),
)


def status_of(exc: OmniEnvError) -> int:
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 400


def _json(value: Any, status: int = 200) -> Response:
    return Response(encode(value), status, media_type="application/json")


def _guarded(endpoint: Endpoint) -> Endpoint:
    """Every failure becomes an error frame with its code; nothing escapes as a bare 500."""

    @functools.wraps(endpoint)
    async def run(request: HTTPRequest) -> Response:
        try:
            return await endpoint(request)
        except OmniEnvError as exc:
            return _json({"type": "error", "data": error_data(exc)}, status_of(exc))
        except Exception as exc:
            failure = unexpected(exc)
            return _json({"type": "error", "data": error_data(failure)}, 500)

    return run


async def read_json(request: HTTPRequest, limit: int) -> Any:
    """The request's JSON body ({} when empty), refused before reading when it is over ``limit``."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise MessageTooLargeError(f"request body of {int(length):,} bytes exceeds the {limit:,}-byte limit")
    raw = await request.body()
    return decode(raw, limit) if raw.strip() else {}


async def read_json_object(request: HTTPRequest, limit: int) -> dict[str, Any]:
    """:func:`read_json` for routes whose body must be a JSON object."""
    data = await read_json(request, limit)
    if not isinstance(data, dict):
        raise MessageValidationError(f"the body must be a JSON object, got {type(data).__name__}")
    return data


def http_routes(manager: SessionManager, handler: Handler) -> list[Route]:
    env_class = manager.env_class
    limit = manager.config.max_message_bytes
    metadata = encode(
        {
            "name": env_class.name,
            "description": env_class.description,
            "readme_content": None,
            "version": "1.0.0",
            "author": None,
            "documentation_url": None,
        }
    )
    schemas = encode(schema(env_class))
    spec = encode(openapi(env_class))
    healthy = encode({"status": "healthy"})

    def constant(body: bytes) -> Endpoint:
        async def endpoint(request: HTTPRequest) -> Response:
            return Response(body, media_type="application/json")

        return endpoint

    async def worker_health(request: HTTPRequest) -> Response:
        """A ``--workers N`` server's health is the answering worker's: its place, its process, and
        the sessions it holds against its share of ``--max-sessions``."""
        place = manager.config.place
        assert place is not None
        return _json(
            {
                "status": "healthy",
                "worker": place.index,
                "workers": place.count,
                "pid": os.getpid(),
                "sessions": manager.used,
                "max_sessions": manager.config.max_sessions,
            }
        )

    async def splits(request: HTTPRequest) -> Response:
        return _json({"env": env_class.name, "splits": list(env_class.splits)})

    async def tasks(request: HTTPRequest) -> Response:
        split = request.path_params["split"]
        index = env_class.task_index()
        total = len(index.split(split))
        try:
            offset = int(request.query_params.get("offset", 0))
            count = int(request.query_params.get("limit", 1000))
        except ValueError:
            raise MessageValidationError("'offset' and 'limit' must be integers") from None
        offset, count = min(max(offset, 0), total), min(max(count, 0), total)  # what the page is: echoed as read
        page = index.page(split, offset, count)
        return _json({"split": split, "total": total, "offset": offset, "tasks": [task.to_dict() for task in page]})

    # -- our stateful sessions ----------------------------------------------------------------

    async def run(session: Session, request: Request) -> Response:
        kind, data = openenv_reply(handler, session, request, await handler.run(session, request))
        return _json({"type": kind, "data": data})

    async def open_session(request: HTTPRequest) -> Response:
        handler.refuse_agents("opening and closing sessions")
        session = await manager.open(owned=False, family=OPENENV)
        return _json({"session_id": session.id}, 201)

    async def close_session(request: HTTPRequest) -> Response:
        handler.refuse_agents("opening and closing sessions")
        session = manager.get(request.path_params["session_id"], OPENENV)
        closed = await manager.request_close(session)
        return _json({"session_id": session.id, "closed": closed, "closing": not closed})

    async def session_reset(request: HTTPRequest) -> Response:
        handler.refuse_agents()  # before the look-up: the answer tells nothing of which sessions exist
        session = manager.get(request.path_params["session_id"], OPENENV)
        return await run(session, parse_reset(await read_json(request, limit)))

    async def session_step(request: HTTPRequest) -> Response:
        handler.refuse_agents()  # before the look-up: the answer tells nothing of which sessions exist
        session = manager.get(request.path_params["session_id"], OPENENV)
        body = await read_json(request, limit)
        action = body.get("action") if isinstance(body.get("action"), dict) else body
        return await run(session, parse_action(action))

    async def session_state(request: HTTPRequest) -> Response:
        handler.refuse_agents()  # before the look-up: the answer tells nothing of which sessions exist
        session = manager.get(request.path_params["session_id"], OPENENV)
        return await run(session, _STATE)

    async def session_end(request: HTTPRequest) -> Response:
        handler.refuse_agents()  # before the look-up: the answer tells nothing of which sessions exist
        session = manager.get(request.path_params["session_id"], OPENENV)
        return await run(session, _END)

    # -- OpenEnv's stateless routes: a fresh environment per call, in a session slot ----------

    async def stateless_reset(request: HTTPRequest) -> Response:
        handler.refuse_agents()
        reset = parse_reset(await read_json(request, limit))
        task = manager.task_for(reset)
        async with manager.scratch() as env:
            observation = await env.reset(task, reset.seed)
        return _json({**reset_reply(observation), "metadata": None})

    async def stateless_step(request: HTTPRequest) -> Response:
        handler.refuse_agents()
        body = await read_json(request, limit)
        action = body.get("action")
        if not isinstance(action, dict):
            raise MessageValidationError('the body must be {"action": {"type": "call_tool", ...}}')
        parsed = parse_action(action)
        if not isinstance(parsed, ToolCall):
            return _json({**handler.tools_data, "metadata": None})
        seed = parse_reset(body).seed
        async with manager.scratch() as env:
            await env.reset(None, seed)
            result = await env.step(parsed)
        return _json({"metadata": None, **step_reply(parsed.name, result)})  # a failure keeps its metadata

    async def stateless_state(request: HTTPRequest) -> Response:
        handler.refuse_agents()
        async with manager.scratch() as env:
            state = await env.state()
        return _json(state.to_dict())

    return [
        Route("/health", constant(healthy) if manager.config.place is None else worker_health, methods=["GET"]),
        Route("/metadata", constant(metadata), methods=["GET"]),
        Route("/schema", constant(schemas), methods=["GET"]),
        Route("/openapi.json", constant(spec), methods=["GET"]),
        Route("/splits", _guarded(splits), methods=["GET"]),
        Route("/splits/{split:path}/tasks", _guarded(tasks), methods=["GET"]),  # a split name may hold "/"
        Route("/sessions", _guarded(open_session), methods=["POST"]),
        Route("/sessions/{session_id}", _guarded(close_session), methods=["DELETE"]),
        Route("/sessions/{session_id}/reset", _guarded(session_reset), methods=["POST"]),
        Route("/sessions/{session_id}/step", _guarded(session_step), methods=["POST"]),
        Route("/sessions/{session_id}/state", _guarded(session_state), methods=["GET"]),
        Route("/sessions/{session_id}/end", _guarded(session_end), methods=["POST"]),
        Route("/reset", _guarded(stateless_reset), methods=["POST"]),
        Route("/step", _guarded(stateless_step), methods=["POST"]),
        Route("/state", _guarded(stateless_state), methods=["GET"]),
    ]
