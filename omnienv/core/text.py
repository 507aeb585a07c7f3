"""Text safe to carry on: what every UTF-8 encoder takes, and no longer than a reader needs.

**Lone surrogates.**
JSON may escape a lone surrogate (``"\\ud800"``) and Python's readers accept it, so text from a
model, a kernel, a foreign server or an agent's own program can carry one into a ``str``. No UTF-8
encoder takes it (orjson refuses the whole value), so left in, it would break the frame, file or
request that carries it on: a reply that never reaches the agent, an eval that stops. It becomes
U+FFFD (the replacement character) where such text enters or, failing that, where it leaves.

**Length.** Error messages quote what caused them (the agent's arguments, a foreign server's
body): each is cut to :data:`ERROR_CHARS` where it becomes a result or a failure.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ERROR_CHARS", "bounded_error", "valid_text"]

ERROR_CHARS = 2_000
"""The most of an error message that a result or a failure quotes."""

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


def bounded_error(message: str) -> str:
    """The start of a long error message. Errors quote the agent's own arguments (a guess, a field
    of the wrong type), so a model that sent two megabytes read them back on every turn, and every
    results file and prompt carried them again; a foreign environment's exception may hold as much."""
    if len(message) <= ERROR_CHARS:
        return message
    return f"{message[:ERROR_CHARS]}… ({len(message) - ERROR_CHARS:,} more characters not shown)"
