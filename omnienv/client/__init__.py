"""Use a served environment: sync and async clients over WebSocket and HTTP, and ``check_url``.

``AsyncWebSocketClient`` has the same async face as an in-process environment
(:class:`~omnienv.core.AsyncEnv`); wire error codes come back as the same exception classes.
Needs the ``server`` extra (``pip install 'omnienv[server]'``).
"""

from omnienv.client.check import acheck_url, check_url
from omnienv.client.http import AsyncHTTPClient, HTTPClient
from omnienv.client.websocket import AsyncWebSocketClient, WebSocketClient, connect
from omnienv.protocol.messages import RemoteTool

__all__ = [
    "AsyncHTTPClient",
    "AsyncWebSocketClient",
    "HTTPClient",
    "RemoteTool",
    "WebSocketClient",
    "acheck_url",
    "check_url",
    "connect",
]
