"""Streamed answers: server-sent events read one at a time, passed on, and assembled for the record.

Each event is forwarded as soon as it is read (with what only the proxy asked for taken out), so
streaming through the proxy stays streaming; the pieces are joined on the side into the one answer
the record keeps, with the token ids and log-probabilities of every delta in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omnienv.capture.wire import (
    Asked,
    Tokens,
    chat_tokens,
    dumps_as_read,
    response_tokens,
    strip_chat,
    strip_response,
)

__all__ = ["ChatStream", "Event", "EventReader", "ResponseStream"]


@dataclass(slots=True)
class Event:
    """One server-sent event: its other lines (``event:``, ``id:``) kept as they came, its data apart."""

    lines: list[bytes] = field(default_factory=list)
    data: bytes | None = None

    def encode(self, data: dict[str, Any] | None = None) -> bytes:
        payload = dumps_as_read(data) if data is not None else self.data
        body = [*self.lines, b"data: " + payload] if payload is not None else self.lines
        return b"\n".join(body) + b"\n\n"


def _event(block: bytes) -> Event:
    event = Event()
    for line in block.split(b"\n"):
        line = line.removesuffix(b"\r")
        if line.startswith(b"data:"):
            data = line[5:].removeprefix(b" ")
            event.data = data if event.data is None else event.data + b"\n" + data
        elif line:
            event.lines.append(line)
    return event


class EventReader:
    """Server-sent events from a byte stream, fed as it arrives (a blank line ends each; bytes, not text)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[Event]:
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        *blocks, self._buffer = buffer.split(b"\n\n")
        return [_event(block) for block in blocks if block.strip()]

    def end(self) -> list[Event]:
        """What is left once the stream has ended: a last event without its blank line."""
        rest, self._buffer = self._buffer, b""
        return [_event(rest)] if rest.strip() else []


class ChatStream:
    """Joins ``chat.completion.chunk`` events into one ``chat.completion``."""

    def __init__(self, asked: Asked) -> None:
        self.asked = asked
        self.head: dict[str, Any] = {}
        self.prompt: list[int] | None = None
        self.usage: dict[str, Any] | None = None
        self.choices: dict[int, dict[str, Any]] = {}
        self.error: Any = None

    def feed(self, chunk: dict[str, Any]) -> dict[str, Any] | None:
        """Take in one chunk; returns what to pass on (None: drop it, a usage chunk nobody asked for)."""
        if "error" in chunk:
            self.error = chunk["error"]
            return chunk
        if not self.head:
            self.head = {k: chunk[k] for k in ("id", "created", "model", "system_fingerprint") if k in chunk}
        if isinstance(chunk.get("prompt_token_ids"), list):
            self.prompt = chunk["prompt_token_ids"]
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            self._choice(choice)
        if not chunk.get("choices") and chunk.get("usage") and not self.asked.usage:
            return None
        if not self.asked.usage and chunk.get("usage") is not None:
            chunk["usage"] = None
        return strip_chat(chunk, self.asked)

    def _choice(self, choice: dict[str, Any]) -> None:
        index = int(choice.get("index", 0))
        state = self.choices.setdefault(
            index, {"index": index, "message": {"role": "assistant", "content": None}, "finish_reason": None}
        )
        message = state["message"]
        for key, value in (choice.get("delta") or {}).items():
            if key == "tool_calls":
                _merge_calls(message.setdefault("tool_calls", []), value or ())
            elif isinstance(value, str) and key != "role":
                message[key] = (message.get(key) or "") + value
            elif value is not None:
                message[key] = value
        if isinstance(choice.get("token_ids"), list):
            state.setdefault("token_ids", []).extend(choice["token_ids"])
        content = (choice.get("logprobs") or {}).get("content")
        if isinstance(content, list):
            state.setdefault("logprobs", {"content": []})["content"].extend(content)
        if choice.get("finish_reason") is not None:
            state["finish_reason"] = choice["finish_reason"]

    def completion(self) -> dict[str, Any]:
        """The chunks joined, with every token field the upstream sent."""
        joined: dict[str, Any] = {"object": "chat.completion", **self.head}
        joined["choices"] = [self.choices[i] for i in sorted(self.choices)]
        if self.usage is not None:
            joined["usage"] = self.usage
        if self.prompt is not None:
            joined["prompt_token_ids"] = self.prompt
        return joined

    def finish(self) -> tuple[dict[str, Any], Tokens]:
        """The assembled answer as the harness got it, and the token fields read from it."""
        joined = self.completion()
        tokens = chat_tokens(joined)
        if not self.asked.usage:
            joined.pop("usage", None)
        return strip_chat(joined, self.asked), tokens


def _merge_calls(calls: list[dict[str, Any]], deltas: Any) -> None:
    for delta in deltas:
        index = int(delta.get("index", len(calls)))
        while len(calls) <= index:
            calls.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        call = calls[index]
        for key in ("id", "type"):
            if delta.get(key):
                call[key] = delta[key]
        function = delta.get("function") or {}
        call["function"]["name"] += function.get("name") or ""
        call["function"]["arguments"] += function.get("arguments") or ""


class ResponseStream:
    """Reads a streamed Responses API answer: ``response.completed`` carries the whole response."""

    def __init__(self, asked: Asked) -> None:
        self.asked = asked
        self.final: dict[str, Any] | None = None
        self.tokens: Tokens | None = None
        self.delta_logprobs: list[Any] = []
        self.error: Any = None

    def feed(self, data: dict[str, Any]) -> dict[str, Any]:
        kind = data.get("type")
        if kind == "response.output_text.delta" and isinstance(data.get("logprobs"), list):
            self.delta_logprobs += data["logprobs"]  # entries as sent: read (and checked) once complete
        if kind in ("response.output_text.delta", "response.output_text.done") and not self.asked.logprobs:
            if data.get("logprobs"):
                data["logprobs"] = []
        if isinstance(data.get("part"), dict) and not self.asked.logprobs and data["part"].get("logprobs"):
            data["part"]["logprobs"] = []
        if isinstance(data.get("item"), dict):  # output_item events carry the whole message, its parts too
            strip_response({"output": [data["item"]]}, self.asked)
        if kind in ("response.failed", "error"):
            self.error = data.get("response", data)
        response = data.get("response")
        if kind in ("response.completed", "response.incomplete") and isinstance(response, dict):
            self.tokens = response_tokens(response, self.delta_logprobs or None)
            self.final = response
        if isinstance(response, dict):
            strip_response(response, self.asked)
        return data
