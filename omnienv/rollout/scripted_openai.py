"""An OpenAI-compatible server whose "model" is a scripted player.

It answers ``/v1/chat/completions`` and ``/v1/responses`` like a real endpoint, so evals,
examples and tests exercise the real ``openai`` client path offline. A responder reads the
conversation and returns tool calls (Wordle's solver is one:
:func:`omnienv.envs.wordle.responder.wordle_responder`). ``Faults`` makes chosen requests fail or
stall, to prove that runs survive a flaky endpoint.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

__all__ = ["Faults", "Reply", "Responder", "create_app", "observations"]

Reply = list[tuple[str, dict[str, Any]]]
"""Tool calls as (name, arguments); an empty list answers with plain text."""
Responder = Callable[[list[dict[str, Any]]], Reply]


@dataclass(frozen=True, slots=True)
class Faults:
    """Every ``error_every``-th request gets a 500; every ``stall_every``-th waits ``stall_s``."""

    error_every: int = 0
    stall_every: int = 0
    stall_s: float = 30.0


def observations(messages: list[dict[str, Any]]) -> list[str]:
    """The tool results in a conversation, in order, in any of the three wire shapes."""
    found = []
    for message in messages:
        if message.get("role") == "tool":
            found.append(_text(message.get("content")))
        elif message.get("type") == "function_call_output":
            found.append(_text(message.get("output")))
        elif message.get("role") == "user" and "<tool_response>" in _text(message.get("content")):
            found.append(_text(message["content"]).split("<tool_response>", 1)[1].split("</tool_response>")[0].strip())
    return found


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def create_app(responder: Responder, faults: Faults = Faults()) -> Starlette:
    counter = itertools.count(1)

    async def fault() -> JSONResponse | None:
        number = next(counter)
        if faults.stall_every and number % faults.stall_every == 0:
            await asyncio.sleep(faults.stall_s)
        if faults.error_every and number % faults.error_every == 0:
            return JSONResponse({"error": {"message": "injected failure", "type": "server_error"}}, 500)
        return None

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        if (failed := await fault()) is not None:
            return failed
        calls = responder(body["messages"])
        usage = _usage(body["messages"], calls)
        if body.get("tools"):
            tool_calls = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for name, args in calls
            ]
            message = {
                "role": "assistant",
                "content": None if calls else "I am done.",
                "tool_calls": tool_calls or None,
            }
        else:  # a text-mode client: write the calls the way Hermes-style models do
            text = "\n".join(f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in calls)
            message = {"role": "assistant", "content": text or "I am done."}
        return JSONResponse(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "scripted"),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if calls and body.get("tools") else "stop",
                    }
                ],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
            }
        )

    async def responses(request: Request) -> JSONResponse:
        body = await request.json()
        if (failed := await fault()) is not None:
            return failed
        calls = responder(body["input"])
        usage = _usage(body["input"], calls)
        output = [
            {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex[:12]}",
                "call_id": f"call_{uuid.uuid4().hex[:12]}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
            for name, args in calls
        ]
        return JSONResponse(
            {
                "id": f"resp_{uuid.uuid4().hex}",
                "object": "response",
                "created_at": int(time.time()),
                "model": body.get("model", "scripted"),
                "status": "completed",
                "output": output,
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": body.get("tools", []),
                "usage": {
                    "input_tokens": usage[0],
                    "output_tokens": usage[1],
                    "total_tokens": sum(usage),
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            }
        )

    async def models(request: Request) -> JSONResponse:
        return JSONResponse(
            {"object": "list", "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "omnienv"}]}
        )

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/models", models),
        ]
    )


def _usage(messages: list[dict[str, Any]], calls: Reply) -> tuple[int, int]:
    """Rough token counts (four characters a token), so usage accounting has numbers to add up."""
    prompt = sum(len(_text(m.get("content") or m.get("output"))) // 4 + 1 for m in messages)
    return prompt, 8 * max(1, len(calls))
