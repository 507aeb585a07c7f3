"""Server limits, in one typed place, with defaults meant for training at scale."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from omnienv.core.errors import InvalidValueError
from omnienv.protocol.codec import DEFAULT_MAX_MESSAGE_BYTES
from omnienv.server.origins import check_allowed
from omnienv.server.workers import WorkerPlace

__all__ = [
    "IDLE_TIMEOUT",
    "LOG_LEVELS",
    "MAX_SESSIONS",
    "STEP_TIMEOUT",
    "WORKER_STALL_TIMEOUT",
    "ServerConfig",
    "needs_server_extra",
]

# The defaults, named once: ``omnienv serve`` and ``python -m omnienv.app`` offer the same ones.
MAX_SESSIONS = 16_384
IDLE_TIMEOUT = 600.0
STEP_TIMEOUT = 300.0
WORKER_STALL_TIMEOUT = 60.0
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
"""uvicorn's log levels: what ``--log-level`` accepts."""


def needs_server_extra(exc: ImportError) -> str:
    """What ``omnienv serve`` and ``python -m omnienv.app`` say when the server, or a dialect's
    routes as the app is assembled (NeMo Gym's signed cookie: itsdangerous), cannot import."""
    return f"serving needs the server extra: pip install 'omnienv[server]' ({exc})"


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """How many sessions, for how long, and how patient the server is with environments.

    ``idle_timeout`` reaps sessions nobody has used for that long (a crashed trainer's sessions
    free themselves); ``step_timeout`` turns a hung step into a ``STEP_TIMEOUT`` error and a
    failed episode. ``None`` disables either. WebSocket pings find half-open connections.
    """

    max_sessions: int = MAX_SESSIONS
    idle_timeout: float | None = IDLE_TIMEOUT
    step_timeout: float | None = STEP_TIMEOUT
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    blocking_threads: int = 0
    """Threads for blocking environments' calls, shared by all sessions and started on demand: at
    most this many calls run at once; 0 allows 1024 (see :func:`~omnienv.core.threads.blocking_threads`).
    Worker *processes* are ``omnienv serve --workers N``."""
    ws_ping_interval: float | None = 20.0
    ws_ping_timeout: float | None = 20.0
    ws_compression: bool = False
    """permessage-deflate. Off: on loopback and LANs it costs more CPU per step than it saves
    (clients such as OpenEnv's ask for it by default; uvicorn would grant it)."""
    ui: bool = True
    """Serve the browser pages under ``/ui`` (static files; they cost nothing until opened)."""
    agent_only: bool = False
    """Agents get tools over MCP and nothing else: reset, step and state are refused on every
    route (``AGENT_ONLY``); the operator starts episodes under ``/operator`` with a token."""
    operator_token: str | None = None
    """Bearer token of the ``/operator`` routes in agent-only mode; ``create_app`` makes one if unset."""
    allow_hosts: tuple[str, ...] = ()
    """``Host`` names answered besides loopback ones and the bound host (``--allow-host``): ``name``
    (any port), ``name:port``, or ``*``. A server bound to 0.0.0.0 needs the names clients use."""
    allow_origins: tuple[str, ...] = ()
    """Browser origins allowed besides loopback ones (``--allow-origin``): ``scheme://host[:port]`` or ``*``."""
    worker_stall_timeout: float | None = WORKER_STALL_TIMEOUT
    """Seconds a worker of a ``--workers N`` server may leave its event loop unanswering before
    the supervisor kills it and stops the server (:mod:`omnienv.server.supervisor`): a wedged loop
    would otherwise hold its sessions forever and keep taking its share of new connections. Far
    longer than any legitimate call holds the loop (``check_env`` fails one over half a second).
    None disables it; a single-process server has no supervisor to watch it."""
    place: WorkerPlace | None = None
    """Which worker process of a ``--workers N`` server this app runs in (set by the supervisor,
    :mod:`omnienv.server.supervisor`): its sessions get ids it owns. None: the server's only process."""

    def __post_init__(self) -> None:
        for name in ("max_sessions", "max_message_bytes", "blocking_threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidValueError(f"{name} must be a whole number, got {type(value).__name__} {value!r}")
        for name in ("idle_timeout", "step_timeout", "worker_stall_timeout", "ws_ping_interval", "ws_ping_timeout"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise InvalidValueError(
                    f"{name} must be a number of seconds or None, got {type(value).__name__} {value!r}"
                )
        if self.max_sessions < 1:
            raise InvalidValueError("max_sessions must be >= 1")
        for name in ("idle_timeout", "step_timeout"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise InvalidValueError(f"{name} must be > 0 seconds, or None to disable it")
        if self.worker_stall_timeout is not None and not self.worker_stall_timeout > 0:
            raise InvalidValueError(
                f"worker_stall_timeout (--worker-stall-timeout) must be > 0 seconds, got {self.worker_stall_timeout!r} "
                "(to let a worker stall forever: None, or 0 on the command line)"
            )
        if self.blocking_threads < 0:
            raise InvalidValueError("blocking_threads must be >= 0 (0: up to 1024, started on demand)")
        if self.max_message_bytes < 1024:
            raise InvalidValueError("max_message_bytes must be >= 1024")
        for name in ("allow_hosts", "allow_origins"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise InvalidValueError(f"{name} must be a sequence of strings, got {type(value).__name__} {value!r}")
            object.__setattr__(self, name, tuple(value))
        check_allowed(self.allow_hosts, self.allow_origins)
