"""Bytes <-> JSON objects with orjson, and the typed errors a bad frame deserves."""

from __future__ import annotations

from typing import Any

import orjson

from omnienv.core.errors import InvalidJSONError, MessageTooLargeError, MessageValidationError
from omnienv.core.text import valid_text

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "MAX_ANSWER_BYTES", "decode", "encode"]

DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024
MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The largest answer omnienv reads from a model server (a policy's client and the capture proxy
alike): far above any reply with token ids and log-probabilities, far below what would take a
machine's memory."""
_dumps = orjson.dumps


def encode(value: Any) -> bytes:
    """Compact UTF-8 JSON bytes; OpenEnv's parsers read it as they read their own frames.

    A lone surrogate in a string (an agent's program printed ``"\ud800"``, and the kernel's JSON
    carried it) makes orjson refuse the whole value: it is replaced then, so the reply still
    reaches the client instead of the connection dropping. Only a refused value pays for the walk.
    """
    try:
        return _dumps(value)
    except TypeError:
        return _dumps(valid_text(value))


def decode(raw: str | bytes, limit: int = DEFAULT_MAX_MESSAGE_BYTES) -> dict[str, Any]:
    """One JSON object, or a typed error saying what was wrong with the frame."""
    if len(raw) > limit:
        raise MessageTooLargeError(
            f"message of {len(raw):,} bytes exceeds the {limit:,}-byte limit; send smaller frames "
            "or raise the server's max_message_bytes"
        )
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidJSONError(f"Invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise MessageValidationError(
            f'a message must be a JSON object like {{"type": "step", ...}}, got {type(value).__name__}'
        )
    return value
