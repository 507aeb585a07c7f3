"""``/schema`` and ``/openapi.json``, computed once per app from the environment's tools."""

from __future__ import annotations

from typing import Any

from omnienv.core.env import EnvironmentBase

__all__ = ["openapi", "schema"]

_BLOCK = {
    "type": "object",
    "properties": {
        "type": {"enum": ["text", "image"]},
        "text": {"type": "string"},
        "data": {"type": "string", "description": "base64 image bytes"},
        "mimeType": {"type": "string"},
    },
    "required": ["type"],
}
_STATE = {
    "type": "object",
    "properties": {
        "episode_id": {"type": ["string", "null"]},
        "step_count": {"type": "integer", "minimum": 0},
        "done": {"type": "boolean"},
        "truncated": {"type": "boolean"},
        "task_id": {"type": ["string", "null"]},
    },
    "required": ["episode_id", "step_count"],
    "additionalProperties": True,
}
_OBSERVATION = {
    "type": "object",
    "description": "A reset prompt (content) or a call-tool result in OpenEnv's MCP shape.",
    "properties": {
        "metadata": {"type": "object"},
        "content": {"type": "array", "items": _BLOCK},
        "tool_name": {"type": "string"},
        "result": {
            "type": "object",
            "properties": {
                "content": {"type": "array", "items": _BLOCK},
                "structured_content": {},
                "meta": {},
                "data": {},
                "is_error": {"type": "boolean"},
            },
        },
        "error": {"type": ["object", "null"]},
        "tools": {"type": "array"},
    },
    "required": ["metadata"],
}


def schema(env_class: type[EnvironmentBase]) -> dict[str, Any]:
    """Action (one branch per tool, plus list_tools), observation and state JSON Schemas."""
    calls = [
        {
            "type": "object",
            "description": spec.description,
            "properties": {
                "type": {"const": "call_tool"},
                "tool_name": {"const": spec.name},
                "arguments": spec.parameters,
            },
            "required": ["type", "tool_name", "arguments"],
        }
        for spec in env_class.tools.values()
    ]
    list_tools = {"type": "object", "properties": {"type": {"const": "list_tools"}}, "required": ["type"]}
    return {"action": {"oneOf": [*calls, list_tools]}, "observation": _OBSERVATION, "state": _STATE}


def _op(summary: str, *, body: bool = False, status: str = "200") -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": summary,
        "responses": {status: {"description": "OK", "content": {"application/json": {"schema": {}}}}},
    }
    if body:
        operation["requestBody"] = {"required": False, "content": {"application/json": {"schema": {}}}}
    return operation


_SESSION = [{"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}}]


def openapi(env_class: type[EnvironmentBase]) -> dict[str, Any]:
    def with_id(operation: dict[str, Any]) -> dict[str, Any]:
        return {**operation, "parameters": _SESSION}

    return {
        "openapi": "3.1.0",
        "info": {"title": f"omnienv: {env_class.name}", "version": "1.0.0", "description": env_class.description},
        "paths": {
            "/health": {"get": _op('Liveness: {"status": "healthy"}')},
            "/metadata": {"get": _op("Name, description and version of the environment")},
            "/schema": {"get": _op("JSON Schemas of actions, observations and state")},
            "/splits": {"get": _op("Task splits")},
            "/splits/{split}/tasks": {
                "get": {
                    **_op("Tasks of one split (never their answers); ?offset=&limit="),
                    "parameters": [{"name": "split", "in": "path", "required": True, "schema": {"type": "string"}}],
                }
            },
            "/reset": {"post": _op("OpenEnv stateless reset: a fresh environment per call", body=True)},
            "/step": {"post": _op("OpenEnv stateless step: a fresh environment per call", body=True)},
            "/state": {"get": _op("OpenEnv stateless state of a fresh environment")},
            "/mcp": {"post": _op("JSON-RPC 2.0: tools/list, tools/call, openenv/session/create|close", body=True)},
            "/sessions": {"post": _op("Open a session; returns its session_id", body=True, status="201")},
            "/sessions/{session_id}": {"delete": with_id(_op("Close a session"))},
            "/sessions/{session_id}/reset": {"post": with_id(_op("Start an episode", body=True))},
            "/sessions/{session_id}/step": {"post": with_id(_op("Call one tool (an MCP action)", body=True))},
            "/sessions/{session_id}/state": {"get": with_id(_op("The episode's state"))},
        },
    }
