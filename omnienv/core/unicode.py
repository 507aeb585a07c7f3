"""Text that every UTF-8 encoder takes: lone UTF-16 surrogates replaced.

JSON may escape a lone surrogate (``"\\ud800"``) and Python's readers accept it, so text from a
model, a kernel, a foreign server or an agent's own program can carry one into a ``str``. No UTF-8
encoder takes it (orjson refuses the whole value), so left in, it would break the frame, file or
request that carries it on: a reply that never reaches the agent, an eval that stops. It becomes
U+FFFD (the replacement character) where such text enters or, failing that, where it leaves.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["valid_text"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_str(text: str) -> str:
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


def valid_text(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (dict keys too) replaced by U+FFFD; dicts,
    lists and tuples are copied (tuples as lists, as JSON has them). Walked without recursion: a
    value read from JSON may nest as deep as its reader allowed."""
    if isinstance(value, str):
        return _valid_str(value)
    holder = [value]
    pending: list[tuple[list[Any] | dict[Any, Any], Any]] = [(holder, 0)]
    while pending:
        parent, key = pending.pop()
        item = parent[key]
        if isinstance(item, str):
            parent[key] = _valid_str(item)
        elif isinstance(item, dict):
            copied = {_valid_str(k) if isinstance(k, str) else k: v for k, v in item.items()}
            parent[key] = copied
            pending.extend((copied, k) for k in copied)
        elif isinstance(item, (list, tuple)):
            listed = list(item)
            parent[key] = listed
            pending.extend((listed, index) for index in range(len(listed)))
    return holder[0]
