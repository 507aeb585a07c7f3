"""Use a served environment: sync and async clients over WebSocket and HTTP, and ``check_url``.

``AsyncWebSocketClient`` has the same async face as an in-process environment
(:class:`~omnienv.core.AsyncEnv`); wire error codes come back as the same exception classes.
Each client can also start an image made by ``omnienv build`` and own it (``from_docker_image``).
Needs the ``server`` extra (``pip install 'omnienv[server]'``).
"""

from omnienv.client.check import acheck_url, check_url
from omnienv.client.container import Container, ContainerError, start_container
from omnienv.client.http import AsyncHTTPClient, HTTPClient
from omnienv.client.websocket import AsyncWebSocketClient, WebSocketClient, connect
from omnienv.protocol.messages import RemoteTool

__all__ = [
    "AsyncHTTPClient",
    "AsyncWebSocketClient",
    "Container",
    "ContainerError",
    "HTTPClient",
    "RemoteTool",
    "WebSocketClient",
    "acheck_url",
    "check_url",
    "connect",
    "start_container",
]
