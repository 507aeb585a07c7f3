"""Bytes <-> JSON objects with orjson, and the typed errors a bad frame deserves."""

from __future__ import annotations

from typing import Any

import orjson

from omnienv.core.errors import InvalidJSONError, MessageTooLargeError, MessageValidationError

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "decode", "encode"]

DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024
encode = orjson.dumps
"""Compact UTF-8 JSON bytes; OpenEnv's parsers read it as they read their own frames."""


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
