"""JSON-RPC 2.0 framing for OpenEnv's ``/mcp`` session methods, with no I/O.

OpenEnv serves ``tools/list``, ``tools/call`` and its own ``openenv/session/create|close`` as
JSON-RPC over ``POST /mcp`` and inside ``{"type": "mcp"}`` WebSocket frames. Every response has
``result`` or ``error`` (``{"code", "message", "data"}``) and always an ``id``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from omnienv.core.errors import OmniEnvError, ProtocolError, SessionNotFoundError

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SERVER_ERROR",
    "RpcError",
    "RpcRequest",
    "error_response",
    "parse_rpc",
    "rpc_error_for",
    "success",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000


@dataclass(frozen=True, slots=True)
class RpcRequest:
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    id: Any = None


class RpcError(Exception):
    """A JSON-RPC error to send back; ``data`` may carry details such as ``max_sessions``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def parse_rpc(raw: bytes | str | dict[str, Any]) -> RpcRequest:
    """One request, or :class:`RpcError` with OpenEnv's parse/invalid-request/params codes."""
    if isinstance(raw, dict):
        body: Any = raw
    else:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise RpcError(PARSE_ERROR, "Parse error") from None
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or not isinstance(body.get("method"), str):
        raise RpcError(
            INVALID_REQUEST, 'Invalid request: expected {"jsonrpc": "2.0", "method": ..., "params": {...}, "id": ...}'
        )
    params = body.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "Params must be an object")
    return RpcRequest(body["method"], params, body.get("id"))


def success(result: Any, request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(error: RpcError, request_id: Any = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": error.code, "message": error.message, "data": error.data},
    }


def rpc_error_for(exc: OmniEnvError) -> RpcError:
    """Our error as a JSON-RPC error; ``data.code`` keeps the wire code for our clients."""
    data: dict[str, Any] = {"code": exc.code, **(getattr(exc, "details", None) or {})}
    if isinstance(exc, ProtocolError | SessionNotFoundError):
        return RpcError(INVALID_PARAMS, exc.message, data)
    return RpcError(SERVER_ERROR, exc.message, data)  # capacity, environment failures, usage
