"""What tests that start servers share: a free loopback port and a health probe that never hangs."""

from __future__ import annotations

import socket
import urllib.request

__all__ = ["free_port", "healthy"]


def free_port() -> int:
    """A port nothing listens on now, on 127.0.0.1 (the only address tests may use)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def healthy(url: str, path: str = "/health") -> bool:
    """Whether ``url + path`` answers 200 within a second; False while nothing answers yet."""
    try:
        with urllib.request.urlopen(f"{url}{path}", timeout=1.0) as response:
            return bool(response.status == 200)
    except OSError:
        return False
