"""What the importers of remote environments (OpenEnv's ``/ws``, ORS over HTTP) share: how much of
a server's reply is read, how it is decoded, and how its URL is named.

A foreign server is trusted with its environment, not with the process that talks to it: a reply
that is not JSON, nests a hundred thousand lists deep, holds hundreds of megabytes or trickles in a
byte a second must end as a typed failure of that one step, never as a crash, a thread stuck for
hours or memory exhausted. Text may carry a lone UTF-16 surrogate (``"\\ud800"`` is legal JSON), which
no UTF-8 encoder takes: left in, it would break the frame that carries it on to the agent, so it
becomes U+FFFD here, where the foreign text enters. URLs may hold a password (``user:pw@host``),
which messages and class names never repeat.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from omnienv.core import EnvironmentFailure
from omnienv.core.text import valid_text

__all__ = ["MAX_REPLY_BYTES", "decode", "public", "redacted", "too_large"]

MAX_REPLY_BYTES = 32 * 2**20
"""The most of one reply read before it is a failure: tool results with screenshots fit many times."""
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
SHOWN_CHARS = 200


def public(url: str) -> str:
    """``url`` as messages and names show it: without the credentials it may hold."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def redacted(text: str, url: str) -> str:
    """``text`` (an exception's message, which may quote ``url``) without ``url``'s credentials."""
    userinfo = urlsplit(url).netloc.rpartition("@")[0]
    return text.replace(f"{userinfo}@", "") if userinfo else text


def too_large(what: str, error: type[EnvironmentFailure], limit: int = MAX_REPLY_BYTES) -> EnvironmentFailure:
    """The failure of a reply cut off at ``limit`` bytes."""
    return error(f"{what}: the reply is over {limit:,} bytes, the most read of one reply")


def decode(raw: str | bytes, what: str, error: type[EnvironmentFailure]) -> Any:
    """The JSON value of ``raw``, its lone surrogates replaced; ``error`` naming ``what`` when
    it is not JSON (or nests too deep to read)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        value = json.loads(text)
    except RecursionError:
        raise error(f"{what}: the reply nests too deep to read") from None
    except ValueError as exc:
        shown = text[:SHOWN_CHARS].replace("\n", " ")
        raise error(f"{what}: the reply is not JSON ({exc}): {shown!r}") from None
    return valid_text(value) if _SURROGATE_ESCAPE.search(text) else value
