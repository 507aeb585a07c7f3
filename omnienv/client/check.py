"""``check_url``: the environment contract checks, run over the wire against a server."""

from __future__ import annotations

import asyncio
from typing import Any

from omnienv.client.websocket import AsyncWebSocketClient
from omnienv.core.checker import CheckReport, acheck_env

__all__ = ["acheck_url", "check_url"]


async def acheck_url(url: str, *, strings: list[str] | None = None, **options: Any) -> CheckReport:
    """Every contract check, each on fresh WebSocket sessions of the server at ``url``."""
    return await acheck_env(lambda: AsyncWebSocketClient.connect(url, **options), target=url, strings=strings)


def check_url(url: str, *, strings: list[str] | None = None, **options: Any) -> CheckReport:
    """Blocking :func:`acheck_url`, for the command line (call ``acheck_url`` inside a loop)."""
    return asyncio.run(acheck_url(url, strings=strings, **options))
