"""What OpenEnv environments share, in-process or over the wire: tools from JSON Schemas, the
observation written out as text, and the episode plumbing.

OpenEnv tools are known by their JSON Schema alone (an MCP ``input_schema``, or the Action model's
schema), and only once the environment runs, so the omnienv tools are built from those schemas when
the class is made: arguments are checked against the schema (an unknown argument is named in the
error the agent reads), and the tool function carries a real signature so dialects that read Python
signatures (TRL, Verifiers) see typed parameters.

Both backends speak in OpenEnv's wire shape, ``{"observation": {...}, "reward": r, "done": d}``: an
in-process environment's Observation is dumped to it, a server sends it. What the agent reads is
rendered from the observation's fields; ``metadata`` stays out (OpenEnv environments keep
bookkeeping there, sometimes the answer), except an ``error`` or ``message`` in it when the
observation has nothing else to say.
"""

from __future__ import annotations

import copy
import inspect
import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from omnienv.catalog._foreign import DEFAULT_SPLITS, seed_tasks
from omnienv.core import Environment, Task, ToolError, ToolResult, ToolSpec

__all__ = ["OpenEnvBase", "Payload", "render", "schema_tool", "tool_specs"]

Payload = dict[str, Any]
"""One OpenEnv step or reset outcome in wire shape: ``observation`` (fields), ``reward``, ``done``."""

DEFAULT_MAX_TURNS = 50
"""OpenEnv environments often never end by themselves (an echo); the contract needs a limit."""
SHOWN_METADATA = ("error", "message")
_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}


class _Absent:
    """An optional argument the agent left out: dropped before the call, never sent as null."""

    def __copy__(self) -> _Absent:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Absent:
        return self

    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()


class _SchemaArguments(BaseModel):
    """Arguments checked against the tool's own JSON Schema, before pydantic forbids extras."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, arbitrary_types_allowed=True)
    json_validator: ClassVar[Any] = None

    @model_validator(mode="before")
    @classmethod
    def _against_schema(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and cls.json_validator is not None:
            error = jsonschema.exceptions.best_match(cls.json_validator.iter_errors(dict(data)))
            if error is not None and error.validator != "additionalProperties":
                where = ".".join(str(part) for part in error.absolute_path)
                raise ValueError(f"{where}: {error.message}" if where else error.message)
        return data


def _hint(prop: Mapping[str, Any]) -> Any:
    kind = prop.get("type")
    if kind == "array":
        return list
    if kind == "object":
        return dict
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def schema_tool(
    name: str, description: str, schema: Mapping[str, Any], handler: Callable[[Any, dict[str, Any]], Any]
) -> ToolSpec:
    """A tool named ``name`` whose arguments follow ``schema``; a call runs ``handler(env, arguments)``."""
    parameters = {k: copy.deepcopy(v) for k, v in schema.items() if k not in ("title", "$schema")}
    parameters["type"] = "object"
    properties: dict[str, Any] = parameters.setdefault("properties", {})
    for prop in properties.values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    required = set(parameters.get("required") or ())
    fields: dict[str, Any] = {}
    renamed: list[tuple[str, str]] = []
    params: list[inspect.Parameter] = []
    for position, (key, prop) in enumerate(properties.items()):
        prop = prop if isinstance(prop, Mapping) else {}
        default = ... if key in required else copy.deepcopy(prop.get("default", ABSENT))
        field_name = f"argument_{position}"
        renamed.append((field_name, key))
        fields[field_name] = (Any, Field(default, alias=key))
        if key.isidentifier():
            params.append(
                inspect.Parameter(
                    key,
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=_hint(prop),
                    default=inspect.Parameter.empty if default is ... else prop.get("default"),
                )
            )
    model = create_model(f"OpenEnv_{name}_arguments", __base__=_SchemaArguments, **fields)
    model.json_validator = jsonschema.Draft202012Validator(parameters)

    def call(self: Any, **arguments: Any) -> Any:
        return handler(self, {k: v for k, v in arguments.items() if v is not ABSENT})

    call.__name__ = call.__qualname__ = name
    call.__doc__ = description
    call.__annotations__ = {p.name: p.annotation for p in params}
    receiver = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    call.__signature__ = inspect.Signature([receiver, *params])  # type: ignore[attr-defined]
    return ToolSpec(
        name=name,
        description=description or f"Call the environment's '{name}' tool.",
        parameters=parameters,
        function=call,
        is_async=False,
        arguments_model=model,
        renamed=tuple(renamed),
    )


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
        text, error = render(self.send_reset(seed).get("observation") or {})
        return text or error or f"{self.description or self.name}: the episode has started."

    def outcome(self, payload: Payload) -> ToolResult:
        """The step's result as omnienv reads it; an error the agent caused becomes a ToolError."""
        reward, done = float(payload.get("reward") or 0.0), bool(payload.get("done"))
        text, error = render(payload.get("observation") or {})
        if error is not None and not done and not reward:
            raise ToolError(error if not text or text == error else f"{error}\n{text}")
        return ToolResult.of(text or error or "(no output)", reward=reward, done=done)


def tool_specs(
    mcp_tools: Sequence[Mapping[str, Any]] | None, action_schema: Mapping[str, Any] | None
) -> dict[str, ToolSpec]:
    """The omnienv tools: one per MCP tool, else ``act`` with the Action's fields (``metadata`` aside)."""
    if mcp_tools is not None:
        specs = {}
        for item in mcp_tools:
            name = str(item["name"])
            schema = item.get("input_schema") or item.get("inputSchema") or {"type": "object", "properties": {}}

            def call(env: OpenEnvBase, arguments: dict[str, Any], _name: str = name) -> ToolResult:
                return env.outcome(env.send_step({"type": "call_tool", "tool_name": _name, "arguments": arguments}))

            specs[name] = schema_tool(name, str(item.get("description") or ""), schema, call)
        return specs
    schema = copy.deepcopy(dict(action_schema or {}))
    schema.get("properties", {}).pop("metadata", None)
    if "required" in schema:
        schema["required"] = [k for k in schema["required"] if k != "metadata"]

    def act(env: OpenEnvBase, arguments: dict[str, Any]) -> ToolResult:
        return env.outcome(env.send_step(arguments))

    description = str(schema.pop("description", "") or "Take one action in the environment.")
    return {"act": schema_tool("act", description, schema, act)}
