"""``create_app``: one environment (a class or a registered name) in, one ASGI app out."""

from __future__ import annotations

import difflib
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import fields, replace
from typing import Any

from starlette.routing import BaseRoute

from omnienv.core.env import EnvironmentBase
from omnienv.core.errors import InvalidTypeError, UsageError
from omnienv.core.registry import load_environment
from omnienv.server.app import OmniApp, RoutesPlugin, assemble
from omnienv.server.config import ServerConfig
from omnienv.server.handler import Handler
from omnienv.server.sessions import EnvFactory, SessionManager

__all__ = ["create_app", "default_plugins"]


def _ui(manager: SessionManager, handler: Handler, taken: Sequence[BaseRoute]) -> Iterable[BaseRoute]:
    from omnienv.ui.routes import ui_routes  # static files only: no server layers below it

    return ui_routes()


def _operator(manager: SessionManager, handler: Handler, taken: Sequence[BaseRoute]) -> Iterable[BaseRoute]:
    from omnienv.server.operator import operator_routes

    return operator_routes(manager, handler)


def _ors(manager: SessionManager, handler: Handler, taken: Sequence[BaseRoute]) -> Iterable[BaseRoute]:
    from omnienv.dialects.ors import ors_routes

    return ors_routes(manager, handler)


def _nemo_gym(manager: SessionManager, handler: Handler, taken: Sequence[BaseRoute]) -> Iterable[BaseRoute]:
    from omnienv.dialects.nemo_gym import nemo_routes

    return nemo_routes(manager, handler, taken=list(taken))


def default_plugins(config: ServerConfig) -> list[RoutesPlugin]:
    """The web pages (unless ``--no-ui``), then the operator routes on an agent-only server, or
    else the training dialects that serve the same sessions: ORS and NeMo Gym."""
    plugins: list[RoutesPlugin] = [_ui] if config.ui else []
    if config.agent_only:  # episodes are the operator's; the training dialects stay off
        plugins.append(_operator)
    else:
        plugins.extend((_ors, _nemo_gym))
    return plugins


def _configured(config: ServerConfig | None, overrides: dict[str, Any]) -> ServerConfig:
    """``config`` (default: the defaults) with ``overrides`` set. A misspelt setting or a config that
    is not a :class:`ServerConfig` is refused naming the settings there are (``dataclasses.replace``
    would say only that ``__init__`` got an unexpected keyword)."""
    if config is not None and not isinstance(config, ServerConfig):
        raise UsageError(f"create_app's config must be a ServerConfig, got {type(config).__name__} {config!r}")
    settings = [item.name for item in fields(ServerConfig)]
    for name in overrides:
        if name not in settings:
            close = difflib.get_close_matches(name, settings, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise UsageError(f"create_app has no setting '{name}'.{hint} Settings: {', '.join(settings)}.")
    return replace(config or ServerConfig(), **overrides)


def create_app(
    env: type[EnvironmentBase] | str,
    config: ServerConfig | None = None,
    *,
    env_factory: EnvFactory | None = None,
    plugins: Sequence[RoutesPlugin] | None = None,
    **overrides: Any,
) -> OmniApp:
    """Serve ``env`` (a class or a registered name) over ``/ws``, HTTP, MCP, ORS and NeMo Gym.

    ``overrides`` set single :class:`ServerConfig` fields, e.g. ``max_sessions=64``.
    ``env_factory`` makes each session's environment elsewhere (``omnienv.ray``). ``plugins``
    replaces :func:`default_plugins` (each adds routes on the same sessions). The app's
    ``state.manager`` is the :class:`~omnienv.server.SessionManager`.
    """
    env_class = load_environment(env) if isinstance(env, str) else env
    if not (isinstance(env_class, type) and issubclass(env_class, EnvironmentBase)):
        fix = (
            f"pass its class, {type(env).__name__}, not an instance"
            if isinstance(env, EnvironmentBase)
            else "pass an Environment subclass or a registered name, such as create_app('wordle')"
        )
        raise InvalidTypeError(
            f"create_app needs an Environment class or its registered name, got {type(env).__name__} {env!r:.80}: {fix}"
        )
    config = _configured(config, overrides)
    if config.agent_only and not config.operator_token:
        config = replace(config, operator_token=secrets.token_urlsafe(24))
    chosen = default_plugins(config) if plugins is None else plugins
    return assemble(env_class, config, env_factory=env_factory, plugins=chosen)
