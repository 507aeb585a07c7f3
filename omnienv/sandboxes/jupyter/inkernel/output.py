"""Bounds on what the kernel sends, applied inside the kernel, before a byte leaves it.

- **streams** (``print``, fd-level output of subprocesses): per cell and per stream, the first
  ``stream_head`` characters go out as usual, then only a tail of ``stream_tail`` characters is
  kept, sent at the end of the cell after a ``[... N characters omitted ...]`` line;
- **every message** (results, displays, errors, replies): strings are cut to ``text_chars``, a
  message's text to ``message_chars`` in all, an image over ``image_chars`` (base64) is replaced
  by a note, long lists and dicts are shortened, and binary buffers over the budget are dropped.

This is for an honest cell that prints too much: it costs the agent a few kilobytes of context
and the host a small message. A hostile cell can undo all of it (it runs in this process), so the
host also refuses any frame over its size limit (``ZMQ_MAXMSGSIZE``) before decoding it.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from typing import Any

MARKER = "\n[... {} characters omitted ...]\n"


class StreamCap:
    """Wraps one ipykernel ``OutStream``'s ``write``: a head per cell, then a tail."""

    def __init__(self, stream: Any, head: int, tail: int) -> None:
        self.stream = stream
        self.forward = stream.write
        self.head, self.tail_limit = head, tail
        self.lock = threading.Lock()
        self.reset()
        stream.write = self.write

    def reset(self) -> None:
        self.sent = 0
        self.dropped = 0
        self.tail: deque[str] = deque()
        self.tail_len = 0

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            return int(self.forward(text))  # the stream's own TypeError
        size = len(text)
        with self.lock:
            if self.sent < self.head:
                take = text[: self.head - self.sent]
                self.sent += len(take)
                text = text[len(take) :]
                self.forward(take)
            if text:
                self.tail.append(text[-self.tail_limit :])
                self.dropped += len(text) - len(self.tail[-1])
                self.tail_len += len(self.tail[-1])
                while self.tail_len - len(self.tail[0]) >= self.tail_limit:
                    self.tail_len -= len(self.tail[0])
                    self.dropped += len(self.tail.popleft())
        return size

    def finish(self) -> None:
        """At the end of a cell: what was held back, after a note of how much was dropped."""
        with self.lock:
            tail = "".join(self.tail)
            dropped = self.dropped + max(0, len(tail) - self.tail_limit)
            tail = tail[-self.tail_limit :] if tail else ""
            self.reset()
        if dropped:
            self.forward(MARKER.format(dropped) + tail)
        elif tail:
            self.forward(tail)


class Bounder:
    """Shortens one message's content to the limits (see the module docs)."""

    def __init__(self, limits: dict[str, int]) -> None:
        self.text_chars = limits["text_chars"]
        self.message_chars = limits["message_chars"]
        self.image_chars = limits["image_chars"]
        self.items = limits["items"]

    def content(self, content: Any) -> Any:
        self.budget, self.image_budget = self.message_chars, self.image_chars
        return self._value(content, 0)

    def _text(self, text: str) -> str:
        limit = max(0, min(self.text_chars, self.budget))
        if len(text) > limit:
            omitted = len(text) - limit
            text = text[:limit] + MARKER.format(omitted)
        self.budget -= len(text)
        return text

    def _value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if depth > 8:
            return None
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            notes = []
            for i, (key, item) in enumerate(value.items()):
                if i >= self.items:
                    break
                key = str(key)[:200]
                if key.startswith("image/") and isinstance(item, str) and len(item) > self.image_budget:
                    notes.append(f"[an image of {len(item)} characters was not sent: it is over the limit]")
                elif key.startswith("image/") and isinstance(item, str):
                    out[key] = item  # images have a budget of their own
                    self.image_budget -= len(item)
                else:
                    out[key] = self._value(item, depth + 1)
            if notes:
                out["text/plain"] = "\n".join([*([str(out["text/plain"])] if "text/plain" in out else []), *notes])
            return out
        if isinstance(value, list | tuple):
            items = list(value)
            if len(items) > self.items:  # keep the ends: a traceback's last frames matter most
                items = [
                    *items[: self.items // 4],
                    f"[... {len(items) - self.items} items omitted ...]",
                    *items[-(self.items - self.items // 4) :],
                ]
            return [self._value(item, depth + 1) for item in items]
        return value


def install(app: Any, limits: dict[str, int]) -> None:
    """Bound the kernel's streams and messages (``app`` is ipykernel's initialised ``IPKernelApp``)."""
    caps = [StreamCap(stream, limits["stream_head"], limits["stream_tail"]) for stream in (sys.stdout, sys.stderr)]

    def reset() -> None:
        for cap in caps:
            cap.reset()

    def finish() -> None:  # ipykernel flushes the streams after this, before its reply
        for cap in caps:
            cap.finish()

    app.shell.events.register("pre_execute", reset)
    app.shell.events.register("post_execute", finish)

    session = app.session
    forward = session.send
    bounder = Bounder(limits)
    buffer_budget = limits["image_chars"]

    def send(stream: Any, msg_or_type: Any, content: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(msg_or_type, dict):
            msg_or_type = {**msg_or_type, "content": bounder.content(msg_or_type.get("content", {}))}
            buffers = msg_or_type.get("buffers")
            if buffers and sum(len(b) for b in buffers) > buffer_budget:
                msg_or_type["buffers"] = []
        elif content is not None:
            content = bounder.content(content)
        buffers = kwargs.get("buffers")
        if buffers and sum(len(b) for b in buffers) > buffer_budget:
            kwargs["buffers"] = None
        return forward(stream, msg_or_type, content, *args, **kwargs)

    session.send = send
