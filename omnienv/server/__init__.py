"""Serve an environment: OpenEnv-compatible ``/ws``, stateful HTTP sessions, tasks, health.

:func:`omnienv.app.create_app` assembles the whole server (these routes plus the dialects');
this package is its session layer. Needs the ``server`` extra (``pip install 'omnienv[server]'``).
"""

from omnienv.server.app import OmniApp, RoutesPlugin, assemble
from omnienv.server.config import ServerConfig
from omnienv.server.run import running, serve, uvicorn_config
from omnienv.server.sessions import Session, SessionManager

__all__ = [
    "OmniApp",
    "RoutesPlugin",
    "ServerConfig",
    "Session",
    "SessionManager",
    "assemble",
    "running",
    "serve",
    "uvicorn_config",
]
