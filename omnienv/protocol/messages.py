"""The messages of the session protocol: OpenEnv's ``/ws`` frames, as plain data.

Requests (client -> server) are ``{"type": "reset" | "step" | "end" | "state" | "close", "data": {...}}``.
``end`` is ours (OpenEnv has no such frame): end the episode now and score it, as a trainer does
when its turn budget runs out; its reply is a step's observation frame.
A step's ``data`` is an OpenEnv MCP action: ``{"type": "call_tool", "tool_name", "arguments"}``
or ``{"type": "list_tools"}``. Replies are ``{"type": "observation" | "state" | "error", "data"}``.

Observation frames keep OpenEnv's shape, so its ``GenericEnvClient`` and ``MCPToolClient`` read
them: ``data = {"observation": {..., "metadata": {}}, "reward", "done"}``; a tool's output sits
in the MCP call-tool shape (``tool_name``, ``result{content, structured_content, meta, data,
is_error}``, ``error``). Our richer fields ride alongside at the top of ``data``, where those
clients ignore them: ``truncated``, ``info`` and ``failure``. On the wire ``done`` means "the
episode is over" (ended or truncated), as OpenEnv clients expect; ``truncated`` says which.
A void step (the infrastructure failed) has ``reward: null``, ``done: true`` and its failure in
``metadata`` too (the observation's and the one beside it), the extras OpenEnv's clients keep.

Builders here return dicts; nothing is encoded twice and no pydantic model is built per step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from omnienv.core.content import Block, TextBlock, block_from_dict
from omnienv.core.errors import MessageValidationError, UnknownMessageError
from omnienv.core.types import Failure, Observation, State, StepResult, ToolCall

__all__ = [
    "Close",
    "End",
    "GetState",
    "ListTools",
    "Mcp",
    "RemoteTool",
    "Request",
    "Reset",
    "Step",
    "end_request",
    "observation_from_reply",
    "parse_action",
    "parse_request",
    "parse_reset",
    "reset_reply",
    "reset_request",
    "state_from_reply",
    "state_reply",
    "step_reply",
    "step_request",
    "step_result_from_reply",
    "tools_from_reply",
    "tools_reply",
]

# -- requests ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reset:
    """Start an episode. ``task_id`` may carry its split (``"test/0003"``) or take ``split``."""

    seed: int | None = None
    task_id: str | None = None
    split: str | None = None


@dataclass(frozen=True, slots=True)
class ListTools:
    pass


@dataclass(frozen=True, slots=True)
class GetState:
    pass


@dataclass(frozen=True, slots=True)
class Close:
    pass


@dataclass(frozen=True, slots=True)
class End:
    """End the episode now and score it (the trainer's cut)."""


@dataclass(frozen=True, slots=True)
class Mcp:
    """A JSON-RPC request inside ``{"type": "mcp", "data": {...}}`` (OpenEnv's direct tool path)."""

    payload: dict[str, Any]


Step: TypeAlias = ToolCall
"""A step request is the tool call itself: one object per frame on the hot path, not two."""
Request: TypeAlias = Reset | ToolCall | End | ListTools | GetState | Close | Mcp
_LIST_TOOLS, _GET_STATE, _CLOSE, _END = ListTools(), GetState(), Close(), End()


def parse_request(frame: Mapping[str, Any]) -> Request:
    """The request a decoded frame stands for, or a typed error naming the accepted shapes."""
    kind = frame.get("type")
    if kind == "step":
        return parse_action(_data(frame))
    if kind == "reset":
        return parse_reset(_data(frame))
    if kind == "state":
        return _GET_STATE
    if kind == "end":
        return _END
    if kind == "close":
        return _CLOSE
    if kind == "mcp":
        return Mcp(dict(_data(frame)))
    raise UnknownMessageError(f"Unknown message type: {kind}; expected reset, step, end, state, mcp or close")


def _data(frame: Mapping[str, Any]) -> Mapping[str, Any]:
    data = frame.get("data")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise MessageValidationError(f"'data' must be a JSON object, got {type(data).__name__}")
    return data


def parse_action(data: Mapping[str, Any]) -> ToolCall | ListTools:
    """An OpenEnv MCP action, or our own ``{"name", "arguments"}`` tool call."""
    kind = data.get("type")
    if kind == "call_tool":
        name = data.get("tool_name")
    elif kind == "list_tools":
        return _LIST_TOOLS
    elif kind is None and "name" in data:
        name = data.get("name")
    else:
        raise MessageValidationError(
            f'unknown action {kind!r}: send {{"type": "call_tool", "tool_name": ..., '
            '"arguments": {...}} or {"type": "list_tools"}'
        )
    if not isinstance(name, str) or not name:
        raise MessageValidationError("'tool_name' must be a non-empty string naming the tool to call")
    arguments = data.get("arguments")  # None: no arguments, as ToolCall reads it
    if arguments is not None and not isinstance(arguments, dict):
        raise MessageValidationError(
            f"'arguments' of tool '{name}' must be a JSON object, got {type(arguments).__name__}"
        )
    call_id = data.get("id")
    return ToolCall(name, arguments, call_id if isinstance(call_id, str) else None)


def parse_reset(data: Mapping[str, Any]) -> Reset:
    """Reset kwargs: ``seed``, ``task_id`` (or ``task``), ``split``. Other keys are ignored,
    as OpenEnv does, because trainers pass whole dataset rows to reset."""
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise MessageValidationError(f"'seed' must be a non-negative integer, got {seed!r}")
    task_id = data.get("task_id", data.get("task"))
    if task_id is not None and not isinstance(task_id, str):
        raise MessageValidationError(f"'task_id' must be a string like 'test/0003', got {task_id!r}")
    split = data.get("split")
    if split is not None and not isinstance(split, str):
        raise MessageValidationError(f"'split' must be a string like 'test', got {split!r}")
    return Reset(seed, task_id or None, split or None)


def reset_request(task_id: str | None, seed: int | None, split: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if seed is not None:
        data["seed"] = seed
    if task_id is not None:
        data["task_id"] = task_id
    if split is not None:
        data["split"] = split
    return {"type": "reset", "data": data}


def end_request() -> dict[str, Any]:
    return {"type": "end", "data": {}}


def step_request(call: ToolCall) -> dict[str, Any]:
    data: dict[str, Any] = {"type": "call_tool", "tool_name": call.name, "arguments": call.arguments}
    if call.id is not None:
        data["id"] = call.id
    return {"type": "step", "data": data}


# -- replies (server side) --------------------------------------------------------------------


def _mcp_block(block: Block) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text, "annotations": None, "meta": None}
    out = block.to_dict()
    return {"type": "image", "data": out["data"], "mimeType": block.mime_type, "annotations": None, "meta": None}


_ERROR_TYPES = {"UNKNOWN_TOOL": "tool_not_found", "INVALID_ARGUMENTS": "invalid_args"}
_ERROR_CODES = {kind: code for code, kind in _ERROR_TYPES.items()}


def _mcp_content(observation: Observation) -> tuple[list[dict[str, Any]], str]:
    """The MCP content blocks of ``observation`` and its text; a lone text block (most steps)
    gets both without a generator's worth of work."""
    blocks = observation.content
    if len(blocks) == 1 and type(block := blocks[0]) is TextBlock:
        text = block.text
        return [{"type": "text", "text": text, "annotations": None, "meta": None}], text
    return [_mcp_block(block) for block in blocks], observation.text


def reset_reply(observation: Observation) -> dict[str, Any]:
    content, _ = _mcp_content(observation)
    return {"observation": {"metadata": {}, "content": content}, "reward": 0.0, "done": False}


def step_reply(tool_name: str | None, result: StepResult) -> dict[str, Any]:
    """One step in OpenEnv's call-tool observation shape, plus our ``truncated/info/failure``.

    ``tool_name`` is None for the reply to ``end``, which ran no tool."""
    observation = result.observation
    content, text = _mcp_content(observation)
    info = result.info
    error = None
    failure = result.failure
    metadata: dict[str, Any] = {}
    if failure is not None:
        error = {"error_type": "execution_error", "message": failure.message}
        metadata = {"failure": failure.to_dict()}  # where OpenEnv's clients look: a void step, not a tool's error
    elif observation.is_error:
        code = info.get("error", {}).get("code")
        if code in _ERROR_TYPES:
            error = {"error_type": _ERROR_TYPES[code], "message": text}
    reply: dict[str, Any] = {
        "observation": {
            "metadata": metadata,
            "tool_name": tool_name,
            "result": {
                "content": content,
                "structured_content": None,
                "meta": None,
                "data": text,
                "is_error": observation.is_error,
            },
            "error": error,
        },
        "reward": None if failure is not None else result.reward,  # a void episode has no reward, not 0
        "done": result.done or result.truncated,
        "truncated": result.truncated,
        "info": info,
        "failure": failure.to_dict() if failure is not None else None,
    }
    if metadata:  # OpenEnv's own servers also surface non-empty metadata beside the observation
        reply["metadata"] = metadata
    return reply


def tools_reply(env_name: str, tools: Iterable[Any]) -> dict[str, Any]:
    """The list-tools observation (OpenEnv spells the schema ``input_schema``)."""
    listed = [{"name": spec.name, "description": spec.description, "input_schema": spec.parameters} for spec in tools]
    return {"observation": {"metadata": {}, "tools": listed, "env_name": env_name}, "reward": None, "done": False}


def state_reply(state: State, failure: Failure | None = None) -> dict[str, Any]:
    data = state.to_dict()
    if failure is not None:
        data["truncated"] = True
        data["failure"] = failure.to_dict()
    return data


# -- replies (client side) --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool as a server lists it; the same face as :class:`~omnienv.core.ToolSpec` for callers."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def _blocks(raw: Any) -> tuple[Block, ...]:
    blocks: list[Block] = []
    for item in raw or ():
        if isinstance(item, dict) and item.get("type") in ("text", "image"):
            blocks.append(block_from_dict(item))
        else:  # a foreign block kind: keep it readable rather than drop it
            blocks.append(TextBlock(str(item)))
    return tuple(blocks)


def _foreign_observation(observation: Mapping[str, Any]) -> Observation:
    """An OpenEnv observation without MCP content: show its fields as JSON text."""
    import json

    fields = {k: v for k, v in observation.items() if k != "metadata"}
    return Observation((TextBlock(json.dumps(fields, sort_keys=True)),))


def observation_from_reply(data: Mapping[str, Any]) -> Observation:
    observation = data.get("observation") or {}
    if "content" in observation:
        return Observation(_blocks(observation["content"]))
    return _foreign_observation(observation)


def step_result_from_reply(data: Mapping[str, Any]) -> StepResult:
    observation = data.get("observation") or {}
    result = observation.get("result")
    error = observation.get("error") if isinstance(observation.get("error"), dict) else None
    if isinstance(result, dict):
        obs = Observation(_blocks(result.get("content")), bool(result.get("is_error")))
    elif error is not None:
        obs = Observation((TextBlock(str(error.get("message", ""))),), True)
    else:
        obs = _foreign_observation(observation)
    info = dict(data.get("info") or {})
    if "info" not in data and error is not None:  # an OpenEnv server: its MCP error, in our terms
        code = _ERROR_CODES.get(str(error.get("error_type")), "TOOL_ERROR")
        info["error"] = {"code": code, "message": str(error.get("message", ""))}
        if not obs.is_error:
            obs = Observation(obs.content or (TextBlock(info["error"]["message"]),), True)
    truncated = bool(data.get("truncated", False))
    failure = data.get("failure")
    return StepResult(
        obs,
        float(data.get("reward") or 0.0),
        bool(data.get("done", False)) and not truncated,
        truncated,
        info,
        Failure.from_dict(failure) if failure else None,
    )


def tools_from_reply(data: Mapping[str, Any]) -> tuple[str | None, dict[str, RemoteTool]]:
    observation = data.get("observation") or {}
    tools = {}
    for item in observation.get("tools") or ():
        schema = item.get("input_schema", item.get("inputSchema")) or {"type": "object", "properties": {}}
        tools[item["name"]] = RemoteTool(item["name"], item.get("description") or "", schema)
    return observation.get("env_name"), tools


def state_from_reply(data: Mapping[str, Any]) -> State:
    return State.from_dict(dict(data))
