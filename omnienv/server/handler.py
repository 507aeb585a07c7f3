"""One request in, one typed result out: the path every transport's session requests take.

WebSocket frames, HTTP session routes, OpenEnv's JSON-RPC and the MCP SDK's tool calls, the
operator routes, ORS and NeMo Gym all run their requests through :meth:`Handler.run`, so a rule
(agent-only refusals, one request at a time, deadlines, failed episodes) holds on all of them.
It returns the typed result (:class:`Observation`, :class:`StepResult`, :class:`State`); each
transport encodes it its own way, OpenEnv's frames with :func:`openenv_reply`.
"""

from __future__ import annotations

import logging
import time
from typing import Any, TypeAlias

from omnienv.core.errors import AgentOnlyError, EnvironmentFailure, OmniEnvError, UnknownMessageError
from omnienv.core.types import Observation, State, StepResult, ToolCall
from omnienv.protocol.codec import decode, encode
from omnienv.protocol.codes import error_data
from omnienv.protocol.messages import (
    Close,
    End,
    GetState,
    ListTools,
    Mcp,
    Request,
    Reset,
    parse_request,
    reset_reply,
    state_reply,
    step_reply,
    tools_reply,
)
from omnienv.server.sessions import Session, SessionManager

__all__ = ["Handler", "Result", "error_frame", "openenv_reply"]

logger = logging.getLogger("omnienv.server")
Reply = tuple[str, dict[str, Any]]
Result: TypeAlias = Observation | StepResult | State | ListTools
"""What :meth:`Handler.run` returns: ``ListTools`` itself stands for the (constant) tool list."""


def error_frame(exc: OmniEnvError) -> bytes:
    return encode({"type": "error", "data": error_data(exc)})


def openenv_reply(handler: Handler, session: Session, request: Request, result: Result) -> Reply:
    """``(type, data)`` of OpenEnv's frames for ``result``, the reply to ``request``."""
    if type(result) is StepResult:
        return "observation", step_reply(request.name if type(request) is ToolCall else None, result)
    if type(result) is Observation:
        return "observation", reset_reply(result)
    if type(result) is State:
        return "state", state_reply(result, session.machine.failure)
    return "observation", handler.tools_data


def unexpected(exc: Exception) -> EnvironmentFailure:
    logger.error("unexpected error while serving a request", exc_info=exc)
    return EnvironmentFailure(f"the server failed on this request: {type(exc).__name__}: {exc}")


class Handler:
    """Runs requests on sessions; holds the frames that never change (the tool list)."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager
        env_class = manager.env_class
        self.tools_data = tools_reply(env_class.name, env_class.tools.values())
        self.tools_frame = encode({"type": "observation", "data": self.tools_data})
        self.limit = manager.config.max_message_bytes
        self.inline = manager.inline
        self.mcp: Any = None
        """The JSON-RPC router answering ``{"type": "mcp"}`` frames (set by the app)."""
        self.agent_only = manager.config.agent_only

    def refuse_agents(self, what: str = "reset, step and state") -> None:
        """Raise :class:`AgentOnlyError` on an agent-only server (infrastructure-only requests)."""
        if self.agent_only:
            raise AgentOnlyError(
                f"this server is agent-only: {what} are refused here; agents call tools over MCP (/mcp) "
                "and the operator starts episodes with POST /operator/sessions"
            )

    def frame(self, session: Session, raw: str | bytes) -> bytes | Request | None:
        """The reply to one WebSocket frame when it is ready at once; None when the client asked
        to close; else the parsed request, whose reply :meth:`frame_later` awaits.

        A fast environment's step or reset (``inline``) is answered here, without a coroutine: on
        the hot path every layer of awaiting costs as much as the step itself.
        """
        try:
            request = parse_request(decode(raw, self.limit))
            if self.inline and not self.agent_only:
                if type(request) is ToolCall:
                    result = self.step_inline(session, request)
                    return encode({"type": "observation", "data": step_reply(request.name, result)})
                if type(request) is Reset and not session.machine.needs_fresh_env:
                    return encode({"type": "observation", "data": reset_reply(self.reset_inline(session, request))})
            if type(request) is Close:
                return None
            if type(request) is ListTools:
                session.last_active = time.monotonic()
                return self.tools_frame
            return request
        except OmniEnvError as exc:
            return error_frame(exc)
        except Exception as exc:
            return error_frame(unexpected(exc))

    async def frame_later(self, session: Session, request: Request) -> bytes:
        """The reply to a request :meth:`frame` could not answer at once."""
        try:
            if type(request) is Mcp:
                if self.mcp is None:
                    raise UnknownMessageError("this server does not answer 'mcp' messages")
                return encode({"type": "mcp", "data": await self.mcp.handle(request.payload, session)})
            kind, data = openenv_reply(self, session, request, await self.run(session, request))
            return encode({"type": kind, "data": data})  # in here: a result JSON cannot hold (a set in
            # its info) is the environment's failure, said in an error frame; the connection lives on
        except OmniEnvError as exc:
            return error_frame(exc)
        except Exception as exc:
            return error_frame(unexpected(exc))

    def step_inline(self, session: Session, call: ToolCall) -> StepResult:
        """A fast synchronous environment's step, run right on the event loop (no deadline could
        interrupt it there anyway)."""
        machine = session.machine
        machine.begin(call)
        try:
            return session.env.env.step(call)  # type: ignore[attr-defined, no-any-return]
        finally:
            machine.end(call)
            session.last_active = time.monotonic()

    def reset_inline(self, session: Session, request: Reset) -> Observation:
        """A fast synchronous environment's reset, run right on the event loop; only while the
        session needs no fresh environment (see :meth:`SessionManager.reset`)."""
        machine = session.machine
        machine.begin(request)
        ok = False
        try:
            observation: Observation = session.env.env.reset(  # type: ignore[attr-defined]
                self.manager.task_for(request), request.seed
            )
            ok = True
            return observation
        finally:
            machine.end(request, ok)
            session.last_active = time.monotonic()

    async def run(self, session: Session, request: Request, *, trusted: bool = False) -> Result:
        """Run one request on ``session``; raises :class:`OmniEnvError` for an error reply.

        ``trusted`` callers (the MCP bridge's tool calls, the operator) pass agent-only mode.
        """
        if type(request) is ListTools:
            return request
        if self.agent_only and not trusted:
            self.refuse_agents()
        if self.inline:
            if type(request) is ToolCall:
                return self.step_inline(session, request)
            if type(request) is Reset and not session.machine.needs_fresh_env:
                return self.reset_inline(session, request)
        machine = session.machine
        machine.begin(request)
        ok = False
        try:
            result: Result
            if type(request) is ToolCall:
                result = await self.manager.step(session, request)
            elif type(request) is Reset:
                result = await self.manager.reset(session, request)
            elif type(request) is End:
                result = await self.manager.end(session)
            elif type(request) is GetState:
                result = await self.manager.state(session)
            else:
                raise TypeError(f"cannot run {request!r} here")
            ok = True
            return result
        finally:
            machine.end(request, ok)
            session.last_active = time.monotonic()
