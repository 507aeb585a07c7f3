"""Serve an environment: OpenEnv-compatible ``/ws``, stateful HTTP sessions, tasks, health.

:func:`omnienv.app.create_app` assembles the whole server (these routes plus the dialects');
this package is its session layer. Needs the ``server`` extra (``pip install 'omnienv[server]'``).

Its names are loaded on first use, so that :mod:`omnienv.server.config` (the server's limits and
their defaults, which the command line reads) loads without the network stack.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "OmniApp": "app",
    "RoutesPlugin": "app",
    "assemble": "app",
    "ServerConfig": "config",
    "running": "run",
    "serve": "run",
    "uvicorn_config": "run",
    "Session": "sessions",
    "SessionManager": "sessions",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"omnienv.server.{home}"), name)
