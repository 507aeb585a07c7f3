"""Sessions: one environment instance each, a bounded number of them, reaped when idle.

A session costs one slotted object and one environment instance: no thread and no task of its
own. Blocking environments' calls share one pool that starts a thread only when every thread is
busy (:func:`~omnienv.core.threads.blocking_threads`), so one session's long command never
holds up another's step; non-blocking ones (``blocking = False``, like Wordle) run inline on the
event loop. One reaper task serves the whole server.

Each session belongs to the route family that opened it (:data:`FAMILIES`) and is found only
through that family (:meth:`SessionManager.find`): a NeMo Gym cookie's session is no HTTP
session. Every environment instance, a stateless call's throw-away one included, takes a slot.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from omnienv.core.adapters import AsyncEnv, as_async
from omnienv.core.env import AsyncEnvironment, Environment, EnvironmentBase
from omnienv.core.errors import (
    CapacityError,
    EnvironmentFailure,
    SessionError,
    SessionNotFoundError,
    StepTimeoutError,
    WorkerLostError,
)
from omnienv.core.tasks import Task
from omnienv.core.threads import blocking_threads
from omnienv.core.types import Failure, Observation, State, StepResult, ToolCall
from omnienv.protocol.messages import Reset
from omnienv.protocol.session import SessionMachine
from omnienv.server.bindings import Bindings
from omnienv.server.config import ServerConfig
from omnienv.server.deadlines import DeadlineExpired, StepDeadlines

__all__ = ["FAMILIES", "MCP", "NEMO_GYM", "OPENENV", "OPERATOR", "ORS", "EnvFactory", "Session", "SessionManager"]

logger = logging.getLogger("omnienv.server")
CLOSE_TIMEOUT = 10.0
T = TypeVar("T")
EnvFactory = Callable[[], Awaitable[AsyncEnv]]
"""Makes each session's environment elsewhere (e.g. on a Ray actor) instead of in this process."""

OPENENV = "openenv"
"""OpenEnv's protocol: ``/ws``, the HTTP ``/sessions`` routes and OpenEnv's JSON-RPC on ``/mcp``
(its clients make a session on one and attach to it on another, so they are one family)."""
MCP = "mcp"
"""A standard MCP session (streamable HTTP on ``/mcp``), found by its ``mcp-session-id``."""
OPERATOR = "operator"
"""Agent-only mode: started under ``/operator``, played by one MCP client (``/mcp?session_id=``)."""
ORS = "ors"
NEMO_GYM = "nemo_gym"
FAMILIES = frozenset({OPENENV, MCP, OPERATOR, ORS, NEMO_GYM})


class Session:
    """One client's environment. ``owned`` sessions die with their WebSocket; HTTP-made ones
    live until deleted or reaped, and a WebSocket may attach to them with ``?session_id=``.
    ``family`` is the route family that opened it, set once: only that family finds it."""

    __slots__ = ("attached", "close_pending", "env", "expire", "family", "id", "last_active", "machine", "owned")

    def __init__(self, session_id: str, env: AsyncEnv, owned: bool, family: str = OPENENV) -> None:
        self.id = session_id
        self.env = env
        self.owned = owned
        self.family = family
        self.attached = False
        self.close_pending = False
        """Closing was asked while a WebSocket was attached: close it when that detaches."""
        self.machine = SessionMachine()
        self.last_active = time.monotonic()
        self.expire: Callable[[str], object] | None = None
        """Set by the transport holding a connection: closes it when the session is reaped."""


class SessionManager:
    """Opens, finds, steps and closes sessions within the configured limits."""

    def __init__(
        self, env_class: type[EnvironmentBase], config: ServerConfig, env_factory: EnvFactory | None = None
    ) -> None:
        self.env_class = env_class
        self.config = config
        self.env_factory = env_factory
        self.sessions: dict[str, Session] = {}
        self.bindings: Bindings[Session] = Bindings()
        """The names ORS, NeMo Gym and MCP give sessions; each ends with its session."""
        self._opening = 0
        self._scratch = 0
        """Throw-away environments of stateless calls alive now: they take slots too."""
        self._blocking = not issubclass(env_class, AsyncEnvironment) and env_class.blocking
        self.inline = env_factory is None and issubclass(env_class, Environment) and not env_class.blocking
        """A sync env that never blocks: steps may call it directly on the event loop."""
        # A non-blocking sync env runs inline on the loop: no deadline could interrupt it anyway.
        interruptible = self._blocking or issubclass(env_class, AsyncEnvironment) or env_factory is not None
        deadline = config.step_timeout
        if deadline is not None:  # never under what a step of the environment may rightly take
            deadline = max(deadline, env_class.step_seconds() or 0.0)
        self._deadline = deadline if interruptible else None
        self._deadlines = StepDeadlines(self._deadline) if self._deadline is not None else None
        self._executor: ThreadPoolExecutor | None = None
        self._reaper: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle of the manager -------------------------------------------------------------

    def start(self) -> None:
        """Called on the server's event loop at start-up (the app's lifespan)."""
        self.loop = asyncio.get_running_loop()
        if self.config.idle_timeout is not None and self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
            self._reaper = None
        await asyncio.gather(*(self.close(s) for s in list(self.sessions.values())), return_exceptions=True)
        if self._background:
            await asyncio.wait(self._background, timeout=CLOSE_TIMEOUT)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    @property
    def executor(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = blocking_threads(self.config.blocking_threads)
        return self._executor

    # -- opening and closing sessions ---------------------------------------------------------

    @property
    def active(self) -> int:
        return len(self.sessions)

    @property
    def used(self) -> int:
        """Slots taken: sessions, sessions being opened, and stateless calls' environments."""
        return len(self.sessions) + self._opening + self._scratch

    def _reserve(self) -> None:
        """:class:`CapacityError` at once when every slot is taken (never a wait)."""
        limit = self.config.max_sessions
        used = self.used
        if used >= limit:
            exc = CapacityError(
                f"Server at capacity: {used}/{limit} sessions active. Cannot accept new "
                "connections. Close unused sessions or start the server with a higher --max-sessions."
            )
            exc.details = {"active_sessions": used, "max_sessions": limit}  # type: ignore[attr-defined]
            raise exc

    async def open(self, *, owned: bool, family: str) -> Session:
        """A new session of route ``family``, or :class:`CapacityError` at once when every slot is taken."""
        if family not in FAMILIES:
            raise ValueError(f"unknown session family {family!r}; one of {sorted(FAMILIES)}")
        self._reserve()
        self._opening += 1
        try:
            env = await self.new_env()
        finally:
            self._opening -= 1
        session = Session(self.new_id(), env, owned, family)
        self.sessions[session.id] = session
        return session

    def new_id(self) -> str:
        """A fresh session name (a uuid4); on a ``--workers N`` server one that this worker owns,
        so that every later request naming it is routed here (:mod:`omnienv.server.workers`)."""
        place = self.config.place
        return str(uuid.uuid4()) if place is None else place.mint()

    @asynccontextmanager
    async def scratch(self) -> AsyncIterator[AsyncEnv]:
        """A throw-away environment for one stateless call, holding a slot while it lives."""
        self._reserve()
        self._scratch += 1
        try:
            env = await self.new_env()
            try:
                yield env
            finally:
                await self._close_env(env)
        finally:
            self._scratch -= 1

    async def new_env(self) -> AsyncEnv:
        if self.env_factory is not None:
            return await self.env_factory()
        try:
            if self._blocking:
                loop = asyncio.get_running_loop()
                instance = await loop.run_in_executor(self.executor, self.env_class)
                return as_async(instance, self.executor)
            return as_async(self.env_class())
        except Exception as exc:
            raise EnvironmentFailure(
                f"could not create a {self.env_class.__name__}: {type(exc).__name__}: {exc}"
            ) from exc

    def find(self, session_id: str, family: str) -> Session | None:
        """The live session ``session_id`` if route ``family`` opened it, else None.

        The one rule of reaching a session: every route family looks its sessions up here, and
        another family's session is answered as if it did not exist.
        """
        session = self.sessions.get(session_id)
        return session if session is not None and session.family == family else None

    def get(self, session_id: str, family: str = OPENENV) -> Session:
        session = self.find(session_id, family)
        if session is None:
            raise SessionNotFoundError(
                f"no session '{session_id}': it was closed, reaped after being idle, or never created; "
                "open one with POST /sessions or a new WebSocket"
            )
        return session

    def attach(self, session_id: str, family: str = OPENENV) -> Session:
        """Claim ``session_id`` for one connection; a second claim is refused while it holds it."""
        session = self.get(session_id, family)
        if session.attached:
            raise SessionError(
                f"session '{session_id}' already has a client attached (a WebSocket or an MCP session); "
                "only one may play in a session at a time"
            )
        session.attached = True
        return session

    async def request_close(self, session: Session) -> bool:
        """The one close rule for a close asked from outside (HTTP, JSON-RPC, the operator).

        A session a connection holds (a WebSocket, an MCP session) closes when that connection
        lets go (:meth:`detach`), so a client mid-episode is never cut off by another; any other
        session closes now. Returns whether it closed now.
        """
        if session.attached:
            session.close_pending = True
            return False
        await self.close(session)
        return True

    async def detach(self, session: Session) -> None:
        """The connection holding ``session`` let go: close it if the connection owned it, or if a
        close was asked meanwhile."""
        session.expire = None
        session.attached = False
        if session.owned or session.close_pending:
            await self.close(session)

    async def close(self, session: Session) -> None:
        """Forget the session and close its environment; safe to call twice."""
        if self.sessions.pop(session.id, None) is None:
            return
        self.bindings.drop_session(session)
        session.machine.close()
        await self._close_env(session.env)

    async def _close_env(self, env: AsyncEnv) -> None:
        try:
            await asyncio.wait_for(env.close(), CLOSE_TIMEOUT)
        except Exception:
            logger.exception("closing %s failed", self.env_class.__name__)

    def _close_later(self, env: AsyncEnv) -> None:
        task = asyncio.get_running_loop().create_task(self._close_env(env))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- the three calls ----------------------------------------------------------------------

    async def reset(self, session: Session, request: Reset) -> Observation:
        task = self.task_for(request)
        if session.machine.needs_fresh_env:  # a hung step may still hold the old instance
            old, session.env = session.env, await self.new_env()
            self._close_later(old)
        return await self._bounded(session, "reset", session.env.reset(task, request.seed))

    async def step(self, session: Session, call: ToolCall) -> StepResult:
        if self._deadline is None and self.env_factory is None:
            return await session.env.step(call)
        return await self._bounded(session, f"tool '{call.name}'", session.env.step(call))

    async def end(self, session: Session) -> StepResult:
        """End the episode now and score it (the trainer's cut), under the step deadline."""
        return await self._bounded(session, "end", session.env.end())

    async def state(self, session: Session) -> State:
        return await session.env.state()

    async def _bounded(self, session: Session, what: str, call: Awaitable[T]) -> T:
        try:
            if self._deadlines is None:
                return await call
            return await self._deadlines.run(call)
        except WorkerLostError as exc:  # only reset may follow, on a fresh environment
            session.machine.fail(Failure("worker_lost", exc.message))
            raise
        except DeadlineExpired:
            failure = Failure("step_timeout", f"{what} ran longer than the {self._deadline:g} s deadline")
            session.machine.fail(failure)
            raise StepTimeoutError(
                f"{failure.message}; the episode is void (flagged as failed): call reset() to start another"
            ) from None

    def task_for(self, request: Reset) -> Task | None:
        """The task a reset request names or draws: the environment's own rule (its task index)."""
        return self.env_class.task_index().choose(request.task_id, request.seed, request.split)

    # -- reaping ------------------------------------------------------------------------------

    async def _reap_forever(self) -> None:
        idle = self.config.idle_timeout
        assert idle is not None
        interval = min(max(idle / 4, 0.05), 5.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.reap_idle(time.monotonic() - idle)
            except Exception:  # the reaper must outlive any one bad session
                logger.exception("reaping idle sessions failed")

    async def reap_idle(self, cutoff: float) -> int:
        """Close sessions untouched since ``cutoff`` (monotonic seconds); returns how many."""
        stale = [s for s in self.sessions.values() if s.last_active < cutoff and not s.machine.busy]
        reason = f"session idle for more than {self.config.idle_timeout:g} s (the server's --idle-timeout)"
        for session in stale:
            if session.expire is not None:
                session.expire(reason)
            await self.close(session)
        if stale:
            logger.info("reaped %d idle session(s)", len(stale))
        return len(stale)
