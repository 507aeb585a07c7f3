"""What the capture proxy changes on the wire, and how it reads tokens out of answers.

The proxy asks the upstream for token ids and log-probabilities the way vLLM names them, and takes
those fields out again before the harness sees the answer, unless the harness asked for them
itself: an answer through the proxy has the shape it would have had without it (vLLM's defaults:
``logprobs: null`` on a choice or text part, ``[]`` on a text delta), so a harness that stores or
forwards what it gets does not carry a growing list of prompt ids with every call.

Chat completions: ``logprobs: true`` and ``return_token_ids: true``; the prompt's ids come back as
the top-level ``prompt_token_ids`` (streamed: on the first chunk), each choice's generated ids as
``choices[i].token_ids`` (streamed: per delta). Responses: ``enable_response_messages: true``
returns ``input_messages`` / ``output_messages`` as ``raw_message_tokens`` entries, and
``include: ["message.output_text.logprobs"]`` puts log-probabilities on output text parts (vLLM
gives none for a turn that is only tool calls). Only the first choice is recorded.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "Asked",
    "Tokens",
    "ask_chat",
    "ask_responses",
    "chat_tokens",
    "dumps_as_read",
    "loads_leniently",
    "refuses_token_fields",
    "response_tokens",
    "strip_chat",
    "strip_response",
]

RESPONSE_LOGPROBS = "message.output_text.logprobs"
NOT_FINITE = "no log-probabilities: the upstream sent one that is not a finite number"
HOW = (
    "the upstream must be vLLM-compatible: chat `return_token_ids` and `logprobs`, responses "
    "`enable_response_messages` and `include: [message.output_text.logprobs]`"
)


@dataclass(frozen=True, slots=True)
class Asked:
    """What the harness asked for itself, so the proxy leaves exactly that in the answer."""

    token_ids: bool = False
    logprobs: bool = False
    usage: bool = False
    """Streamed chat: ``stream_options.include_usage``."""


@dataclass(slots=True)
class Tokens:
    """The token fields read from one answer; ``None`` where the upstream gave none."""

    prompt: list[int] | None = None
    completion: list[int] | None = None
    logprobs: list[float] | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def missing(self) -> str | None:
        """Why ids or log-probabilities are absent, in one line; None when all are there."""
        absent = [
            name
            for name, value in (
                ("prompt token ids", self.prompt),
                ("completion token ids", self.completion),
                ("log-probabilities", self.logprobs),
            )
            if value is None and not any(note.startswith(f"no {name}") for note in self.notes)
        ]
        if not absent and not self.notes:
            return None
        said = [f"the upstream returned no {', '.join(absent)} ({HOW})"] if absent else []
        return "; ".join(said + self.notes)


def ask_chat(body: dict[str, Any], request_tokens: bool = True) -> tuple[dict[str, Any], Asked]:
    """The chat body to send upstream, and what the harness asked for itself."""
    streamed = bool(body.get("stream"))
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):  # not ours to mend: the upstream answers it
        return body, Asked(True, True, True)
    asked = Asked(bool(body.get("return_token_ids")), bool(body.get("logprobs")), bool(options.get("include_usage")))
    if not request_tokens:
        return body, Asked(True, True, True)
    sent = body | {"logprobs": True, "return_token_ids": True}
    if streamed:
        sent["stream_options"] = options | {"include_usage": True}
    return sent, asked


def ask_responses(body: dict[str, Any], request_tokens: bool = True) -> tuple[dict[str, Any], Asked]:
    """The responses body to send upstream, and what the harness asked for itself."""
    include = body.get("include") or []
    if not isinstance(include, list):  # not ours to mend: the upstream answers it
        return body, Asked(True, True, True)
    include = list(include)
    asked = Asked(bool(body.get("enable_response_messages")), RESPONSE_LOGPROBS in include, True)
    if not request_tokens:
        return body, Asked(True, True, True)
    if RESPONSE_LOGPROBS not in include:
        include.append(RESPONSE_LOGPROBS)
    return body | {"enable_response_messages": True, "include": include}, asked


def _logprobs(entries: Any) -> list[float] | None:
    """The ``logprob`` of each entry, or None where one is not a finite number (``"NaN"``, a string,
    a missing field): written as is, it would make a record no JSON reader but Python's reads."""
    if not isinstance(entries, list):
        return None
    values = []
    for entry in entries:
        value = entry.get("logprob") if isinstance(entry, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            return None
        try:
            number = float(value)
        except ValueError:
            return None
        if not math.isfinite(number):
            return None
        values.append(number)
    return values


def _chat_logprobs(choice: dict[str, Any]) -> list[float] | None:
    return _logprobs((choice.get("logprobs") or {}).get("content"))


def chat_tokens(completion: dict[str, Any]) -> Tokens:
    """Token fields of a (possibly assembled) chat completion, first choice."""
    choices = completion.get("choices") or [{}]
    choice = choices[0]
    tokens = Tokens(
        prompt=_ids(completion.get("prompt_token_ids")),
        completion=_ids(choice.get("token_ids")),
        logprobs=_chat_logprobs(choice),
        finish_reason=choice.get("finish_reason"),
        usage=dict(completion.get("usage") or {}),
    )
    if tokens.logprobs is None and isinstance((choice.get("logprobs") or {}).get("content"), list):
        tokens.notes.append(NOT_FINITE)
    if len(choices) > 1:
        tokens.notes.append(f"{len(choices)} choices: only the first is recorded")
    _check_counts(tokens, "prompt_tokens", "completion_tokens" if len(choices) == 1 else None)
    return tokens


def response_tokens(response: dict[str, Any], streamed_logprobs: list[Any] | None = None) -> Tokens:
    """Token fields of a Responses API response (``streamed_logprobs``: the entries its deltas carried)."""
    tokens = Tokens(usage=dict(response.get("usage") or {}))
    status = response.get("status")
    tokens.finish_reason = (response.get("incomplete_details") or {}).get("reason") or status
    inputs, outputs = response.get("input_messages"), response.get("output_messages")
    if isinstance(inputs, list) and isinstance(outputs, list) and (inputs or outputs):
        if len(inputs) == 1 and len(outputs) == 1 and _raw(inputs[0]) and _raw(outputs[0]):
            tokens.prompt, tokens.completion = _ids(inputs[0]["tokens"]), _ids(outputs[0]["tokens"])
        else:
            tokens.notes.append(
                f"the response spans {len(inputs)} input and {len(outputs)} output messages (several generations "
                "or not raw tokens): its ids are not recorded"
            )
    found: list[float] | None = []
    parts = 0
    for item in response.get("output") or ():
        for part in item.get("content") or () if item.get("type") == "message" else ():
            if part.get("type") == "output_text" and isinstance(part.get("logprobs"), list) and part["logprobs"]:
                parts += 1
                values = _logprobs(part["logprobs"])
                found = None if found is None or values is None else found + values
    if parts:
        tokens.logprobs = found
        if found is None:
            tokens.notes.append(NOT_FINITE)
    elif streamed_logprobs:
        tokens.logprobs = _logprobs(streamed_logprobs)
        if tokens.logprobs is None:
            tokens.notes.append(NOT_FINITE)
    elif tokens.completion is not None:
        tokens.notes.append("no log-probabilities: vLLM's Responses API gives them on output text only")
    _check_counts(tokens, "input_tokens", "output_tokens")
    return tokens


def _raw(entry: Any) -> bool:
    return (
        isinstance(entry, dict) and entry.get("type") == "raw_message_tokens" and isinstance(entry.get("tokens"), list)
    )


def _ids(value: Any) -> list[int] | None:
    """The list as the upstream sent it (JSON ints already): converting each id would cost more than the rest."""
    return value if isinstance(value, list) else None


def _check_counts(tokens: Tokens, prompt_count: str, completion_count: str | None) -> None:
    """Ids fewer or more than the usage counts (a streamed delta lost on the way), and
    log-probabilities that do not pair one to one with the completion ids, are not kept."""
    for name, count in (("prompt", prompt_count), ("completion", completion_count)):
        ids, used = getattr(tokens, name), tokens.usage.get(count) if count else None
        if ids is not None and isinstance(used, int) and not isinstance(used, bool) and used != len(ids):
            tokens.notes.append(f"no {name} token ids: {len(ids)} came for the {used} the usage counts")
            setattr(tokens, name, None)
    if tokens.logprobs is not None and tokens.completion is not None and len(tokens.logprobs) != len(tokens.completion):
        tokens.notes.append(
            f"{len(tokens.logprobs)} log-probabilities for {len(tokens.completion)} completion tokens: not recorded"
        )
        tokens.logprobs = None


def strip_chat(data: dict[str, Any], asked: Asked) -> dict[str, Any]:
    """Take out of a chat completion or chunk (in place) what only the proxy asked for."""
    if not asked.token_ids:
        data.pop("prompt_token_ids", None)
    for choice in data.get("choices") or ():
        if not asked.token_ids:
            choice.pop("token_ids", None)
        if not asked.logprobs and "logprobs" in choice:
            choice["logprobs"] = None
    return data


def strip_response(data: dict[str, Any], asked: Asked) -> dict[str, Any]:
    """Take out of a response (in place) what only the proxy asked for."""
    if not asked.token_ids:
        data.pop("input_messages", None)
        data.pop("output_messages", None)
    if not asked.logprobs:
        for item in data.get("output") or ():
            for part in item.get("content") or () if isinstance(item, dict) else ():
                if isinstance(part, dict) and "logprobs" in part:
                    part["logprobs"] = None
    return data


def refuses_token_fields(sent: dict[str, Any], request: dict[str, Any], error: bytes) -> bool:
    """Whether an upstream's error answer is about the token fields the proxy added (it names one).

    vLLM-less servers refuse them: ``transformers serve`` answers 422 "Unexpected fields in the
    request: {'return_token_ids'}", OpenAI's API 400 "Unrecognized request argument supplied"."""
    added = [key for key in sent if key not in request and key != "include"]
    if sent.get("include") != request.get("include"):
        added.append("message.output_text.logprobs")
    return any(name.encode() in error for name in added)


def loads_leniently(body: bytes) -> Any:
    """The JSON value of a body; None when it is not JSON.

    What orjson refuses but Python's ``json`` (and so the openai client) reads, ``NaN``,
    ``Infinity``, ``1e400``, a lone surrogate escape, is read the lenient way: a harness acts on
    such an answer, so its call must be recorded, and its requests (which echo it) too."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def dumps_as_read(value: Any) -> bytes:
    """JSON bytes of a body :func:`loads_leniently` read; a lone surrogate is written escaped, as it came."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()
