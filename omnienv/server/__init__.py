"""Serve an environment: OpenEnv-compatible ``/ws``, stateful HTTP sessions, tasks, health.

Needs the ``server`` extra (``pip install 'omnienv[server]'``).
"""

from omnienv.server.app import OmniApp, create_app
from omnienv.server.config import ServerConfig
from omnienv.server.run import running, serve, uvicorn_config
from omnienv.server.sessions import Session, SessionManager

__all__ = [
    "OmniApp",
    "ServerConfig",
    "Session",
    "SessionManager",
    "create_app",
    "running",
    "serve",
    "uvicorn_config",
]
