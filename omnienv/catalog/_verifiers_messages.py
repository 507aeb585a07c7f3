"""Verifiers' chat messages as what an omnienv agent reads: text and image blocks.

Both Verifiers APIs speak in chat messages (pydantic models in 0.3+, plain dicts in datasets): a
``content`` that is a string or a list of parts (``{"type": "text", "text"}``,
``{"type": "image_url", "image_url": {"url": "data:..."}}``). The prompt, a tool's result and an
environment's reply all reach the agent as the blocks of their messages, in order; the roles are
left out, since the agent reads one observation per step.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from typing import Any

from omnienv.core import Block, ImageBlock, TextBlock

__all__ = ["after_last_reply", "blocks", "field", "text_of"]

_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+/-]+);base64,(?P<data>.*)$", re.S)


def field(item: Any, key: str) -> Any:
    """``item[key]`` for a dict, ``item.key`` for a model: messages come as either."""
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _part_blocks(part: Any) -> list[Block]:
    kind = field(part, "type")
    if kind == "text":
        return [TextBlock(str(field(part, "text") or ""))]
    if kind == "image_url":
        url = str(field(field(part, "image_url"), "url") or "")
        match = _DATA_URL.match(url)
        if match:
            try:
                return [ImageBlock(base64.b64decode(match["data"], validate=True), match["mime"])]
            except (binascii.Error, ValueError):
                pass
        return [TextBlock(f"[image: {url[:200]}]")]
    return []


def blocks(messages: Sequence[Any]) -> tuple[Block, ...]:
    """The content of ``messages`` as blocks; adjacent texts join with a blank line."""
    out: list[Block] = []
    for message in messages:
        content = field(message, "content")
        parts: list[Block] = []
        if isinstance(content, str):
            parts = [TextBlock(content)] if content else []
        elif isinstance(content, Sequence):
            parts = [block for part in content for block in _part_blocks(part)]
        for block in parts:
            if out and isinstance(block, TextBlock) and isinstance(out[-1], TextBlock):
                out[-1] = TextBlock(f"{out[-1].text}\n\n{block.text}")
            else:
                out.append(block)
    return tuple(out)


def text_of(content: Sequence[Block]) -> str:
    return "\n\n".join(block.text for block in content if isinstance(block, TextBlock))


def after_last_reply(messages: Sequence[Any]) -> list[Any]:
    """The messages after the last assistant message: what the environment said to the agent's
    latest action (tool results, the environment's reply)."""
    for index in range(len(messages) - 1, -1, -1):
        if field(messages[index], "role") == "assistant":
            return list(messages[index + 1 :])
    return list(messages)
