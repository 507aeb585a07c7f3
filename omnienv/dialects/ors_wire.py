"""ORS's shapes on the wire: content blocks, split types, SSE streams, errors and call outputs.

Kept apart from the router (:mod:`omnienv.dialects.ors`) so each reads as one concept: how an
ORS client expects a reply to look, and which of our sessions a request reaches.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from omnienv.core.content import Block, ImageBlock, TextBlock
from omnienv.core.errors import OmniEnvError, SessionNotFoundError
from omnienv.core.types import StepResult
from omnienv.protocol.codec import encode
from omnienv.server.handler import unexpected
from omnienv.server.http import status_of

__all__ = [
    "SSE_HEADERS",
    "SessionGoneError",
    "StreamError",
    "call_output",
    "error_response",
    "guarded",
    "json_response",
    "ors_blocks",
    "ors_split_type",
    "platform_routes",
    "refusal",
    "refusal_reason",
    "sse",
]

Endpoint = Callable[[Request], Awaitable[Response]]
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_REFUSED = {"UNKNOWN_TOOL": "not_found", "INVALID_ARGUMENTS": "input_validation"}


class StreamError(Exception):
    """The environment failed during a call: sent as an SSE ``error`` event."""


class SessionGoneError(SessionNotFoundError):
    """The session existed but was deleted or reaped (HTTP 410, as ORS servers answer)."""


def ors_blocks(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    """Our content blocks in ORS's shape (``mimeType``, base64 ``data``, ``detail``)."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ImageBlock):
            data = block.base64
            out.append({"type": "image", "data": data, "mimeType": block.mime_type, "detail": None})
        elif isinstance(block, TextBlock):
            out.append({"type": "text", "text": block.text, "detail": None})
    return out


def ors_split_type(split: str) -> str:
    """ORS knows three split types; any other split name counts as training data."""
    lowered = split.lower()
    if lowered in ("test", "eval", "evaluation"):
        return "test"
    if lowered in ("validation", "valid", "val", "dev"):
        return "validation"
    return "train"


def sse(events: AsyncIterator[dict[str, str]], ping: int | None = None) -> Response:
    """An SSE stream (sse-starlette, imported on first use to keep server start-up lean)."""
    from sse_starlette.sse import EventSourceResponse

    return EventSourceResponse(events, ping=ping, headers=SSE_HEADERS)


def json_response(value: Any, status: int = 200) -> Response:
    return Response(encode(value), status, media_type="application/json")


def error_response(exc: OmniEnvError) -> Response:
    """FastAPI's ``{"detail"}`` (what the SDK reads into its exception) plus our error code."""
    status = 410 if isinstance(exc, SessionGoneError) else status_of(exc)
    return json_response({"detail": exc.message, "code": exc.code}, status)


def guarded(endpoint: Endpoint) -> Endpoint:
    async def run(request: Request) -> Response:
        try:
            return await endpoint(request)
        except OmniEnvError as exc:
            return error_response(exc)
        except Exception as exc:
            return error_response(unexpected(exc))

    run.__name__ = run.__qualname__ = endpoint.__name__
    return run


def call_output(result: StepResult) -> bytes:
    """The ``end`` event of a call that ran: ORS's tool output, our flags in ``metadata``."""
    metadata: dict[str, Any] = {
        "done": result.done,
        "truncated": result.truncated,
        "is_error": result.observation.is_error,
    }
    if result.info:
        metadata["info"] = result.info
    if result.failure is not None:
        metadata["failure"] = result.failure.to_dict()
    output = {
        "blocks": ors_blocks(result.observation.content),
        "metadata": metadata,
        "reward": None if result.failure is not None else result.reward,  # void: no reward, never 0
        "finished": result.over,
    }
    return encode({"ok": True, "output": output})


def refusal_reason(result: StepResult) -> str | None:
    """ORS's refusal reason for a call the environment itself refused (unknown tool, bad input)."""
    if not result.observation.is_error or result.over:
        return None
    return _REFUSED.get(result.info.get("error", {}).get("code"))


def refusal(message: str, reason: str, code: str | None = None) -> bytes:
    body: dict[str, Any] = {"ok": False, "error": message, "reason": reason}
    if code is not None:
        body["code"] = code
    return encode(body)


def platform_routes(env_name: str) -> list[Route]:
    """What openreward's platform API (``OPENREWARD_API_URL``) asks of one environment, answered
    truthfully by a server of its own: our environments need no secrets, and this server logs no
    rollouts, so it knows no task difficulty (``Environment.list_required_secrets`` and
    ``get_task_difficulty``)."""

    async def platform(request: Request) -> Response:
        owner_name, _, what = request.path_params["rest"].rpartition("/")
        name = owner_name.rpartition("/")[2]
        if name != env_name:
            return json_response({"detail": f"this server serves environment '{env_name}', not {name!r}"}, 404)
        if what == "required-secrets":
            return json_response({"secrets": []})
        if what == "task-difficulty":
            return json_response({"tasks": []})
        return json_response({"detail": f"no platform route '{what}': required-secrets or task-difficulty"}, 404)

    return [Route("/v1/environments/{rest:path}", platform, methods=["GET"])]
