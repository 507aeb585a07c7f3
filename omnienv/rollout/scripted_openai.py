"""An OpenAI-compatible server whose "model" is a scripted player.

It answers ``/v1/chat/completions`` and ``/v1/responses`` like a real endpoint, so evals,
examples and tests exercise the real ``openai`` client path offline. A responder reads the
conversation and returns tool calls (Wordle's solver is one:
:func:`omnienv.envs.wordle.responder.wordle_responder`). ``Faults`` makes chosen requests fail or
stall, to prove that runs survive a flaky endpoint.

Asked the vLLM way (``return_token_ids``, ``logprobs``; on ``/v1/responses``
``enable_response_messages`` and ``include: ["message.output_text.logprobs"]``), it also returns
token ids and log-probabilities where vLLM puts them, from its own trivial tokeniser
(:class:`ScriptedTokens`: a byte-level one with two special tokens) and deterministic
log-probabilities, and keeps what it produced in ``app.state.produced``. That is what lets a test
check that a capture proxy records exactly the server's tokens and never re-tokenises. A request
that asks none of this gets the same answer as before.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from omnienv.rollout.scripted_tokens import (
    Asked,
    Produced,
    ScriptedTokens,
    hermes_calls,
    logprob_entries,
    sample_completion,
    text_of,
)

__all__ = ["Faults", "Produced", "Reply", "Responder", "ScriptedTokens", "create_app", "observations"]

Reply = list[tuple[str, dict[str, Any]]]
"""Tool calls as (name, arguments); an empty list answers with plain text."""
Responder = Callable[[list[dict[str, Any]]], Reply]

DONE_TEXT = "I am done."


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
            found.append(text_of(message.get("content")))
        elif message.get("type") == "function_call_output":
            found.append(text_of(message.get("output")))
        elif message.get("role") == "user" and "<tool_response>" in text_of(message.get("content")):
            found.append(
                text_of(message["content"]).split("<tool_response>", 1)[1].split("</tool_response>")[0].strip()
            )
    return found


def create_app(responder: Responder, faults: Faults = Faults(), *, tokens: bool = True) -> Starlette:
    """The scripted endpoint. ``tokens=False`` makes it ignore vLLM's token fields, like a server
    (the OpenAI API, an older vLLM) that returns no token ids or log-probabilities."""
    counter = itertools.count(1)
    produced: list[Produced] = []

    async def fault() -> JSONResponse | None:
        number = next(counter)
        if faults.stall_every and number % faults.stall_every == 0:
            await asyncio.sleep(faults.stall_s)
        if faults.error_every and number % faults.error_every == 0:
            return JSONResponse({"error": {"message": "injected failure", "type": "server_error"}}, 500)
        return None

    def asked(body: dict[str, Any], api: str) -> Asked:
        if not tokens:
            return Asked(False, False)
        if api == "chat":
            return Asked(bool(body.get("return_token_ids")), bool(body.get("logprobs")))
        include = body.get("include") or ()
        return Asked(bool(body.get("enable_response_messages")), "message.output_text.logprobs" in include)

    async def chat(request: Request) -> JSONResponse | StreamingResponse:
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
                "content": None if calls else DONE_TEXT,
                "tool_calls": tool_calls or None,
            }
        else:  # a text-mode client: write the calls the way Hermes-style models do
            text = hermes_calls(calls)
            message = {"role": "assistant", "content": text or DONE_TEXT}
        completion: dict[str, Any] = {
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
        want = asked(body, "chat")
        if want.any:  # the model "sampled" the Hermes text of its calls (or its words), then END
            _, sample = sample_completion("chat", body["messages"], hermes_calls(calls) or DONE_TEXT)
            produced.append(sample)
            count = (len(sample.prompt_token_ids), len(sample.completion_token_ids))
            completion["usage"] = {"prompt_tokens": count[0], "completion_tokens": count[1], "total_tokens": sum(count)}
            if body.get("stream"):
                return StreamingResponse(_token_chunks(completion, sample, want), media_type="text/event-stream")
            choice = completion["choices"][0]
            if want.token_ids:
                completion["prompt_token_ids"] = sample.prompt_token_ids
                choice["token_ids"] = sample.completion_token_ids
            if want.logprobs:
                choice["logprobs"] = {"content": logprob_entries(sample, 0, len(sample.completion_token_ids))}
        if body.get("stream"):  # harnesses that only stream (verifiers 0.4's) get the same answer as chunks
            return StreamingResponse(_chunks(completion), media_type="text/event-stream")
        return JSONResponse(completion)

    async def responses(request: Request) -> JSONResponse | StreamingResponse:
        body = await request.json()
        if (failed := await fault()) is not None:
            return failed
        items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        calls = responder(items)
        usage = _usage(items, calls)
        output: list[dict[str, Any]] = [
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
        reply: dict[str, Any] = {
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
        want = asked(body, "responses")
        if want.any:
            completion = hermes_calls(calls) or DONE_TEXT
            prompt_text, sample = sample_completion("responses", items, completion)
            produced.append(sample)
            reply["usage"] |= {
                "input_tokens": len(sample.prompt_token_ids),
                "output_tokens": len(sample.completion_token_ids),
                "total_tokens": len(sample.prompt_token_ids) + len(sample.completion_token_ids),
            }
            if not calls:  # vLLM answers words as an output_text message, log-probabilities on it
                text: dict[str, Any] = {"type": "output_text", "text": DONE_TEXT, "annotations": []}
                if want.logprobs:  # vLLM's cover every completion token, not just the text's
                    text["logprobs"] = logprob_entries(sample, 0, len(sample.completion_token_ids))
                message = {"type": "message", "id": f"msg_{uuid.uuid4().hex[:12]}", "role": "assistant"}
                output.append(message | {"status": "completed", "content": [text]})
            if want.token_ids:
                reply["input_messages"] = [
                    {"type": "raw_message_tokens", "message": prompt_text, "tokens": sample.prompt_token_ids}
                ]
                reply["output_messages"] = [
                    {"type": "raw_message_tokens", "message": completion, "tokens": sample.completion_token_ids}
                ]
        if body.get("stream"):
            return StreamingResponse(_response_events(reply), media_type="text/event-stream")
        return JSONResponse(reply)

    async def models(request: Request) -> JSONResponse:
        return JSONResponse(
            {"object": "list", "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "omnienv"}]}
        )

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/models", models),
        ]
    )
    app.state.produced = produced
    return app


async def _chunks(completion: dict[str, Any]) -> AsyncIterator[str]:
    """A chat completion as the server-sent ``chat.completion.chunk`` events of a streamed one:
    the whole message in one delta, then the finish reason, then the usage."""
    head = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    (choice,) = completion["choices"]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        {**head, "choices": [], "usage": completion["usage"]},
    ]
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


async def _token_chunks(completion: dict[str, Any], sample: Produced, want: Asked) -> AsyncIterator[str]:
    """A streamed completion the vLLM way: ``prompt_token_ids`` on the first chunk, and on each
    choice delta the ``token_ids`` (and logprobs) of the tokens it carries. Text arrives a few
    characters a chunk, tool calls as a header then their arguments in pieces, END with the finish."""
    head = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    (choice,) = completion["choices"]
    message = choice["message"]
    deltas: list[dict[str, Any]] = []
    if message.get("tool_calls"):
        for i, call in enumerate(message["tool_calls"]):
            arguments = call["function"]["arguments"]
            named = {"index": i, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"]}}
            deltas.append({"tool_calls": [named | {"function": named["function"] | {"arguments": ""}}]})
            for start in range(0, len(arguments), 6):
                piece = {"index": i, "function": {"arguments": arguments[start : start + 6]}}
                deltas.append({"tool_calls": [piece]})
    else:
        text = message["content"] or ""
        deltas += [{"content": text[start : start + 4]} for start in range(0, len(text), 4)]
    generated = len(sample.completion_token_ids) - 1  # the tokens before END, spread over the deltas
    bounds = [round(generated * n / max(1, len(deltas))) for n in range(len(deltas) + 1)]
    first = {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    if want.token_ids:
        first["prompt_token_ids"] = sample.prompt_token_ids
        first["choices"][0]["token_ids"] = []
    chunks = [first]
    spans = [(bounds[n], bounds[n + 1], delta, None) for n, delta in enumerate(deltas)]
    spans.append((generated, generated + 1, {}, choice["finish_reason"]))
    for start, stop, delta, finish in spans:
        streamed: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
        if want.token_ids:
            streamed["token_ids"] = sample.completion_token_ids[start:stop]
        if want.logprobs:
            streamed["logprobs"] = {"content": logprob_entries(sample, start, stop)}
        chunks.append({**head, "choices": [streamed]})
    chunks.append({**head, "choices": [], "usage": completion["usage"]})
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


async def _response_events(reply: dict[str, Any]) -> AsyncIterator[str]:
    """A response as the Responses API streams it: created, each output item (text in deltas,
    function-call arguments in one), then ``response.completed`` with the whole response."""
    number = itertools.count()

    def event(kind: str, **fields: Any) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, 'sequence_number': next(number), **fields})}\n\n"

    starting = {key: value for key, value in reply.items() if key not in ("input_messages", "output_messages")}
    yield event("response.created", response=starting | {"status": "in_progress", "output": [], "usage": None})
    for index, item in enumerate(reply["output"]):
        yield event("response.output_item.added", output_index=index, item=item | {"status": "in_progress"})
        if item["type"] == "function_call":
            yield event(
                "response.function_call_arguments.delta",
                output_index=index,
                item_id=item["id"],
                delta=item["arguments"],
            )
            yield event(
                "response.function_call_arguments.done",
                output_index=index,
                item_id=item["id"],
                arguments=item["arguments"],
            )
        for part_index, part in enumerate(item.get("content") or ()):
            where = {"output_index": index, "item_id": item["id"], "content_index": part_index}
            logprobs = part.get("logprobs") or []
            yield event("response.content_part.added", **where, part=part | {"text": "", "logprobs": []})
            text = part["text"]
            for start in range(0, len(text), 4):  # the log-probabilities come with the first delta
                yield event(
                    "response.output_text.delta",
                    **where,
                    delta=text[start : start + 4],
                    logprobs=logprobs if start == 0 else [],
                )
            yield event("response.output_text.done", **where, text=text, logprobs=logprobs)
            yield event("response.content_part.done", **where, part=part)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=reply)


def _usage(messages: list[dict[str, Any]], calls: Reply) -> tuple[int, int]:
    """Rough token counts (four characters a token), so usage accounting has numbers to add up."""
    prompt = sum(len(text_of(m.get("content") or m.get("output"))) // 4 + 1 for m in messages)
    return prompt, 8 * max(1, len(calls))
