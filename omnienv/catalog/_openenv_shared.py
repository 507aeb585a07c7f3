"""What OpenEnv environments share, in-process or over the wire: tools from JSON Schemas, the
observation written out as text, and the episode plumbing.

OpenEnv tools are known by their JSON Schema alone (an MCP ``input_schema``, or the Action model's
schema), and only once the environment runs, so the omnienv tools are built from those schemas when
the class is made (:func:`~omnienv.catalog._schema_tool.schema_tool`, which the other importers use
too).

Both backends speak in OpenEnv's wire shape, ``{"observation": {...}, "reward": r, "done": d}``: an
in-process environment's Observation is dumped to it, a server sends it. What the agent reads is
rendered from the observation's fields; ``metadata`` stays out (OpenEnv environments keep
bookkeeping there, sometimes the answer), except an ``error`` or ``message`` in it when the
observation has nothing else to say.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from omnienv.catalog._foreign import DEFAULT_SPLITS, foreign_reward, seed_tasks
from omnienv.catalog._schema_tool import add_tool, schema_tool
from omnienv.core import (
    Environment,
    EnvironmentDefinitionError,
    EnvironmentFailure,
    Task,
    ToolError,
    ToolResult,
    ToolSpec,
)

__all__ = ["OpenEnvBase", "Payload", "render", "schema_tool", "tool_specs"]

Payload = dict[str, Any]
"""One OpenEnv step or reset outcome in wire shape: ``observation`` (fields), ``reward``, ``done``."""

DEFAULT_MAX_TURNS = 50
"""OpenEnv environments often never end by themselves (an echo); the contract needs a limit."""
SHOWN_METADATA = ("error", "message")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _mcp_result_text(result: Mapping[str, Any]) -> str:
    """An MCP tool result's text content, or its data when it has no text."""
    parts = [
        str(item.get("text", ""))
        for item in result.get("content") or ()
        if isinstance(item, Mapping) and item.get("type") == "text"
    ]
    if parts:
        return "\n".join(parts)
    data = result.get("structured_content", result.get("data"))
    return "" if data is None else _text(data)


def render(fields: Mapping[str, Any]) -> tuple[str, str | None]:
    """The observation's fields as text for the model, and the error it reports (if any).

    An MCP tool observation (``result``/``error``) reads as the tool's own text; any other
    observation as its non-empty fields, one ``name: value`` line each (a lone text field alone).
    """
    shown = {k: v for k, v in fields.items() if k not in ("metadata", "reward", "done") and v not in (None, "", [], {})}
    error = shown.pop("error", None)
    error_text = None
    if error is not None:
        error_text = str(error.get("message", _text(error))) if isinstance(error, Mapping) else _text(error)
    result = shown.get("result")
    if isinstance(result, Mapping) and "content" in result:
        text = _mcp_result_text(result)
        if result.get("is_error") and error_text is None:
            error_text = text or "the tool failed"
        return text, error_text
    shown.pop("tool_name", None)
    if not shown:
        metadata = fields.get("metadata") or {}
        said = [_text(metadata[k]) for k in SHOWN_METADATA if isinstance(metadata, Mapping) and metadata.get(k)]
        return "\n".join(said), error_text
    if len(shown) == 1 and isinstance(next(iter(shown.values())), str):
        return str(next(iter(shown.values()))), error_text
    return "\n".join(f"{k}: {_text(v)}" for k, v in shown.items()), error_text


def _fields(payload: Payload, kind: str) -> Mapping[str, Any]:
    """The observation's fields; an observation that is no JSON object is the environment's failure."""
    fields = payload.get("observation") or {}
    if not isinstance(fields, Mapping):
        raise EnvironmentFailure(f"the OpenEnv {kind}'s observation is not an object: {fields!r:.100}")
    return fields


class OpenEnvBase(Environment):
    """An OpenEnv environment behind omnienv's contract; subclasses say how to reach it.

    Tasks are seeds (``train``/``test`` ranges), passed to OpenEnv's ``reset(seed=...)``. Reward and
    ``done`` are the observation's; an MCP tool's error is the agent's (an error observation), an
    exception from OpenEnv is infrastructure's (flagged ``env_error``).
    """

    splits = ("train", "test")
    max_turns = DEFAULT_MAX_TURNS
    target: ClassVar[str] = ""
    mcp: ClassVar[bool] = False
    """True when the tools are the environment's MCP tools (``CallToolAction``), False for ``act``."""

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return seed_tasks(split, DEFAULT_SPLITS[split])

    def open_backend(self) -> None:
        """Start (or connect to) the OpenEnv environment for this instance."""
        raise NotImplementedError

    def send_reset(self, seed: int) -> Payload:
        raise NotImplementedError

    def send_step(self, action: dict[str, Any]) -> Payload:
        """Step with ``action`` in wire shape (``{"type": "call_tool", ...}`` or the Action's fields)."""
        raise NotImplementedError

    def setup(self, task: Task | None, rng: random.Random) -> str:
        self.open_backend()
        seed = int(task.data["seed"]) if task is not None else rng.randrange(2**31)
        text, error = render(_fields(self.send_reset(seed), "reset"))
        return text or error or f"{self.description or self.name}: the episode has started."

    def outcome(self, payload: Payload) -> ToolResult:
        """The step's result as omnienv reads it; an error the agent caused becomes a ToolError, a
        payload outside OpenEnv's shape (a reward that is no finite number, ``done`` that is not a
        boolean) is the environment's failure."""
        reward = foreign_reward(payload.get("reward"), "the OpenEnv step", booleans=True)  # bool|int|float|None
        done = payload.get("done", False)
        if not isinstance(done, bool | None):
            raise EnvironmentFailure(f"the OpenEnv step's 'done' is not true or false: {done!r:.100}")
        done = bool(done)
        text, error = render(_fields(payload, "step"))
        if error is not None and not done and not reward:
            raise ToolError(error if not text or text == error else f"{error}\n{text}")
        return ToolResult.of(text or error or "(no output)", reward=reward, done=done)


def tool_specs(
    mcp_tools: Sequence[Mapping[str, Any]] | None, action_schema: Mapping[str, Any] | None
) -> dict[str, ToolSpec]:
    """The omnienv tools: one per MCP tool, else ``act`` with the Action's fields (``metadata`` aside)."""
    if mcp_tools is not None:
        specs: dict[str, ToolSpec] = {}
        for item in mcp_tools:
            name = item.get("name") if isinstance(item, Mapping) else None
            if not isinstance(name, str):
                raise EnvironmentDefinitionError(f"the OpenEnv environment lists a tool without a name: {item!r:.100}")
            schema = item.get("input_schema") or item.get("inputSchema") or {"type": "object", "properties": {}}

            def call(env: OpenEnvBase, arguments: dict[str, Any], _name: str = name) -> ToolResult:
                return env.outcome(env.send_step({"type": "call_tool", "tool_name": _name, "arguments": arguments}))

            add_tool(
                specs, schema_tool(name, str(item.get("description") or ""), schema, call), "the OpenEnv environment"
            )
        return specs
    schema = copy.deepcopy(dict(action_schema or {}))
    schema.get("properties", {}).pop("metadata", None)
    if "required" in schema:
        schema["required"] = [k for k in schema["required"] if k != "metadata"]

    def act(env: OpenEnvBase, arguments: dict[str, Any]) -> ToolResult:
        return env.outcome(env.send_step(arguments))

    description = str(schema.pop("description", "") or "Take one action in the environment.")
    return {"act": schema_tool("act", description, schema, act)}
