"""Training records in the shapes other trainers and trace readers take.

Three shapes, each built from the captured token ids and never from re-tokenised text:

- :func:`to_openenv_trace`: OpenEnv's ``TrainingTrace`` (``schema_version`` 1 and one ``turns``
  entry per model call: ``node_id``, ``prompt_token_ids``, ``completion_token_ids``,
  ``per_token_logps``, ``loss_mask`` over prompt plus completion, ``request``, ``response``,
  ``metadata``). Per call, so a rewritten history needs no stitching.
- :func:`to_atif`: an ATIF v1.7 trajectory (Harbor's and NeMo Gym's trajectory format), the
  conversation as system, user and agent steps with the token ids and log-probabilities in each
  agent step's metrics.
- :func:`to_trl_rollout`: what a TRL ``GRPOTrainer`` ``rollout_func`` returns: one row per episode
  with ``prompt_ids``, ``completion_ids``, ``logprobs`` and ``env_mask`` (1 on model tokens), plus
  ``reward``, ``failure`` and ``session_id`` columns that TRL hands to the reward functions.

Each exporter refuses, with the reason, a record it cannot represent faithfully (no token ids, no
log-probabilities where the shape requires them, a rewritten history where it needs one sequence)
instead of filling the gap.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from omnienv import __version__
from omnienv.capture.calls import ModelCall
from omnienv.capture.records import TrainingRecord

__all__ = ["ATIF_SCHEMA_VERSION", "OPENENV_TRACE_SCHEMA_VERSION", "to_atif", "to_openenv_trace", "to_trl_rollout"]

OPENENV_TRACE_SCHEMA_VERSION = 1
ATIF_SCHEMA_VERSION = "ATIF-v1.7"


def _refuse(record: TrainingRecord, shape: str, why: str) -> ValueError:
    return ValueError(f"cannot export session {record.session_id!r} as {shape}: {why}")


# --- OpenEnv TrainingTrace ------------------------------------------------------------------------


def to_openenv_trace(record: TrainingRecord) -> dict[str, Any]:
    """The record as an OpenEnv ``TrainingTrace`` (``TrainingTrace.model_validate`` reads it).

    A failed episode's turns are all masked 0: OpenEnv keeps zero-masked turns as context, and a
    void episode must train nothing. The reward is not part of the shape (OpenEnv scores a session
    separately), so it is left to the record.
    """
    if not record.calls:
        raise _refuse(record, "an OpenEnv trace", "no model calls were captured")
    if record.missing:
        raise _refuse(record, "an OpenEnv trace", "; ".join(record.missing))
    trains = record.failure is None
    prefix = f"{record.session_id}/" if record.session_id else ""
    turns = []
    for position, call in enumerate(record.calls):
        prompt, completion = list(call.prompt_token_ids or []), list(call.completion_token_ids or [])
        metadata: dict[str, Any] = {
            "turn": call.index,
            "finish_reason": call.finish_reason,
            "latency_s": call.latency_s,
            "streamed": call.streamed,
        }
        if record.failure is not None:
            metadata["failure"] = record.failure.to_dict()
        turns.append(
            {
                "node_id": f"{prefix}call-{position}",
                "prompt_token_ids": prompt,
                "completion_token_ids": completion,
                "per_token_logps": [float(lp) for lp in call.logprobs or []],
                "loss_mask": [0] * len(prompt) + [1 if trains else 0] * len(completion),
                "request": call.request,
                "response": call.response,
                "metadata": metadata,
            }
        )
    return {"schema_version": OPENENV_TRACE_SCHEMA_VERSION, "turns": turns}


# --- ATIF ---------------------------------------------------------------------------------------


def _text(content: Any) -> str:
    """Message content as text: a string as is, the text parts of a list joined, else empty."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, dict)]
        return "".join(part for part in parts if isinstance(part, str))
    return ""


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """A tool call's arguments as the object ATIF wants, and the raw text when it was not one."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None  # a call without arguments
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        parsed = None
    return (parsed, None) if isinstance(parsed, dict) else ({}, str(raw))


def _history(call: ModelCall) -> list[dict[str, Any]]:
    """The conversation the call sent, as chat-style messages, for both APIs."""
    request = call.request
    if call.api == "chat":
        return [m for m in request.get("messages") or [] if isinstance(m, dict)]
    messages: list[dict[str, Any]] = []
    if request.get("instructions"):
        messages.append({"role": "system", "content": request["instructions"]})
    items = request.get("input")
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role", "user"), "content": item.get("content")})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")})
        elif kind == "function_call":
            call_ = {
                "id": item.get("call_id"),
                "function": {"name": item.get("name"), "arguments": item.get("arguments")},
            }
            messages.append({"role": "assistant", "content": None, "tool_calls": [call_]})
    return messages


def _reply(call: ModelCall) -> tuple[str, list[dict[str, Any]], str | None]:
    """The model's answer: its text, its tool calls (chat-style) and its reasoning text, if any."""
    response = call.response
    if call.api == "chat":
        choices = response.get("choices") or [{}]
        message = choices[0].get("message") or {}
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        thought = reasoning if isinstance(reasoning, str) and reasoning else None
        return _text(message.get("content")), list(message.get("tool_calls") or []), thought
    texts, calls, thoughts = [], [], []
    for item in response.get("output") or []:
        kind = item.get("type")
        if kind == "message":
            texts.append(_text(item.get("content")))
        elif kind == "function_call":
            calls.append(
                {"id": item.get("call_id"), "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
            )
        elif kind == "reasoning":
            thoughts.append(_text(item.get("summary")) or _text(item.get("content")))
    return "".join(texts), calls, "".join(thoughts) or None


def _atif_tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for n, tool_call in enumerate(calls):
        function = tool_call.get("function") or {}
        arguments, raw = _arguments(function.get("arguments"))
        entry: dict[str, Any] = {
            "tool_call_id": str(tool_call.get("id") or f"call-{n}"),
            "function_name": str(function.get("name") or ""),
            "arguments": arguments,
        }
        if raw is not None:
            entry["extra"] = {"raw_arguments": raw}
        out.append(entry)
    return out


def _usage_count(call: ModelCall, ids: list[int] | None, *names: str) -> int | None:
    if ids is not None:
        return len(ids)
    for name in names:
        value = call.usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _agent_step(call: ModelCall) -> dict[str, Any]:
    text, tool_calls, reasoning = _reply(call)
    metrics: dict[str, Any] = {
        "prompt_tokens": _usage_count(call, call.prompt_token_ids, "prompt_tokens", "input_tokens"),
        "completion_tokens": _usage_count(call, call.completion_token_ids, "completion_tokens", "output_tokens"),
        "prompt_token_ids": call.prompt_token_ids,
        "completion_token_ids": call.completion_token_ids,
    }
    if call.logprobs is not None and len(call.logprobs) == len(call.completion_token_ids or []):
        metrics["logprobs"] = [float(lp) for lp in call.logprobs]
    step: dict[str, Any] = {
        "source": "agent",
        "message": text,
        "model_name": call.response.get("model") or call.request.get("model"),
        "metrics": {key: value for key, value in metrics.items() if value is not None},
        "llm_call_count": 1,
        "extra": {
            "call_index": call.index,
            "finish_reason": call.finish_reason,
            "latency_s": call.latency_s,
            "streamed": call.streamed,
            "missing": call.missing,
        },
    }
    if reasoning:
        step["reasoning_content"] = reasoning
    if tool_calls:
        step["tool_calls"] = _atif_tool_calls(tool_calls)
    return {key: value for key, value in step.items() if value is not None}


def _add_inputs(steps: list[dict[str, Any]], messages: Sequence[dict[str, Any]], copied: bool) -> None:
    """Append the messages the model was given: system and user steps; tool results as the
    observation of the agent step that called them; earlier assistant turns as copied context."""
    for message in messages:
        role = message.get("role")
        if role == "tool":
            owner = steps[-1] if steps and steps[-1]["source"] == "agent" else None
            if owner is None:
                steps.append({"source": "user", "message": _text(message.get("content")), "extra": {"role": "tool"}})
                continue
            known = {call["tool_call_id"] for call in owner.get("tool_calls", [])}
            source = message.get("tool_call_id")
            result = {"source_call_id": source if source in known else None, "content": _text(message.get("content"))}
            owner.setdefault("observation", {"results": []})["results"].append(result)
        elif role == "assistant":
            step: dict[str, Any] = {
                "source": "agent",
                "message": _text(message.get("content")),
                "is_copied_context": copied,
            }
            if message.get("tool_calls"):
                step["tool_calls"] = _atif_tool_calls(list(message["tool_calls"]))
            steps.append(step)
        else:
            source = "system" if role in ("system", "developer") else "user"
            steps.append({"source": source, "message": _text(message.get("content"))})


def _new_inputs(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages after the last assistant turn: what the harness added since the model spoke."""
    for position in range(len(history) - 1, -1, -1):
        if history[position].get("role") == "assistant":
            return history[position + 1 :]
    return history


def to_atif(record: TrainingRecord, agent_name: str = "omnienv", agent_version: str = __version__) -> dict[str, Any]:
    """The record as an ATIF v1.7 trajectory: the first call's conversation, then per call an agent
    step (its reply, tool calls and token metrics) followed by what the harness added before the
    next call. The outcome (reward, failure) and the token view's state go in ``extra``."""
    if not record.calls:
        raise _refuse(record, "an ATIF trajectory", "no model calls were captured")
    steps: list[dict[str, Any]] = []
    for position, call in enumerate(record.calls):
        history = _history(call)
        _add_inputs(steps, history if position == 0 else _new_inputs(history), copied=position == 0)
        steps.append(_agent_step(call))
    for number, step in enumerate(steps, start=1):
        step["step_id"] = number
    models = [step["model_name"] for step in steps if step.get("model_name")]
    agent: dict[str, Any] = {"name": agent_name, "version": agent_version}
    if models:
        agent["model_name"] = models[0]
    counted = [step["metrics"] for step in steps if "metrics" in step]
    final: dict[str, Any] = {"total_steps": len(steps)}
    for total, key in (("total_prompt_tokens", "prompt_tokens"), ("total_completion_tokens", "completion_tokens")):
        values = [metrics[key] for metrics in counted if key in metrics]
        if values:
            final[total] = sum(values)
    return {
        "schema_version": ATIF_SCHEMA_VERSION,
        "session_id": record.session_id,
        "agent": agent,
        "steps": steps,
        "final_metrics": final,
        "extra": {
            "reward": record.reward,
            "failure": record.failure.to_dict() if record.failure else None,
            "task_id": record.task_id,
            "env": record.env,
            "rewritten": record.rewritten,
            "missing": record.missing,
            "cut": record.cut,
        },
    }


# --- TRL GRPOTrainer rollout_func ---------------------------------------------------------------


def to_trl_rollout(records: Iterable[TrainingRecord]) -> dict[str, list[Any]]:
    """What a TRL ``GRPOTrainer`` ``rollout_func`` returns, one row per record, in order.

    ``prompt_ids`` is the first call's prompt and ``completion_ids`` everything after it (each
    completion and the turns between); ``env_mask`` marks the model's tokens 1 and the turns
    between 0, as TRL's own tool loop does, and TRL multiplies it into the loss mask. Those turns
    carry log-probability 0.0 (TRL's convention for tool tokens); a model token the server gave no
    log-probability for is None, which TRL reads as NaN and leaves out of its importance ratio.
    ``reward`` is None for a failed episode: a reward function returning that column lets TRL mask
    the row instead of scoring it 0. ``cut`` says whether the token limit cut one of the row's
    answers, for a reward function that treats overlong answers apart.
    """
    rows: dict[str, list[Any]] = {
        key: []
        for key in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "failure", "session_id", "cut")
    }
    for record in records:
        segments = record.segments
        if segments is None:
            raise _refuse(record, "a TRL rollout", "; ".join(record.missing))
        if void := record.void:
            raise _refuse(record, "a TRL rollout", "; ".join(void))
        if len(segments) > 1:
            raise _refuse(record, "a TRL rollout", f"the history was rewritten ({len(segments)} token segments)")
        segment = segments[0]
        start = segment.prompt_length
        mask = segment.loss_mask[start:]
        if not any(mask):
            raise _refuse(record, "a TRL rollout", "the model generated no tokens")
        rows["prompt_ids"].append(segment.token_ids[:start])
        rows["completion_ids"].append(segment.token_ids[start:])
        rows["logprobs"].append(
            [lp if generated else 0.0 for lp, generated in zip(segment.logprobs[start:], mask, strict=True)]
        )
        rows["env_mask"].append(mask)
        rows["reward"].append(record.reward)
        rows["failure"].append(None if record.failure is None else f"{record.failure.kind}: {record.failure.message}")
        rows["session_id"].append(record.session_id)
        rows["cut"].append(bool(record.cut))
    return rows
