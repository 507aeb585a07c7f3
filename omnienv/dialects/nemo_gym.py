"""NeMo Gym resources-server dialect: REST routes with the session in a signed cookie.

NeMo Gym's agents (``simple_agent``) and its ``ServerClient`` drive a resources server this way:
``POST /seed_session`` with a dataset row (sets the cookie), one ``POST /<tool>`` per function
call with the call's arguments as the body (the reply body is the observation's text, what the
agent hands the model; ``X-Omnienv-Done`` says when the episode is over), ``POST /verify`` with the Responses-API
request and final response (returns the reward), then ``POST /close_session``;
``POST /aggregate_metrics`` summarises many ``/verify`` replies. NeMo's ``gymnasium_agent``
protocol (``/reset``, ``/step``: tool outputs with image parts) is
:mod:`omnienv.dialects.nemo_gym_gymnasium`. Every reply on a session
re-sends its cookie, because NeMo's agent keeps only the cookies of the latest reply.

Any omnienv environment is served this way without extra code: a seeded row picks its task by
``task_id`` (and ``split``/``seed``, like ``reset``); the reward ``/verify`` reports is the
environment's own (step rewards plus the rubric), and an infrastructure failure sets
``mask_sample``. ``nemo_gym_rows`` writes the matching dataset, tools included.

NeMo's ``ServerClient`` joins ``http://host:port`` and the path, so the routes sit at the root
of our app next to omnienv's own; a tool whose name is already a root route (``/reset``,
``/health``...) is only served under the ``/nemo_gym`` prefix, where every route is mirrored.
The cookie is signed with itsdangerous; its secret is random per server unless given (or set
in ``OMNIENV_NEMO_GYM_SECRET``, e.g. for several workers behind one address).
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from omnienv.core.content import Block, ImageBlock, TextBlock
from omnienv.core.errors import (
    EnvironmentFailure,
    MessageValidationError,
    OmniEnvError,
    SessionError,
    SessionNotFoundError,
)
from omnienv.core.ledger import EpisodeLedger
from omnienv.core.tasks import Task
from omnienv.core.types import Failure, StepResult, ToolCall
from omnienv.dialects.nemo_gym_data import nemo_gym_rows, nemo_gym_tools
from omnienv.protocol.codec import encode
from omnienv.protocol.codes import register_code
from omnienv.protocol.messages import End, parse_reset
from omnienv.server.handler import Handler, unexpected
from omnienv.server.http import read_json_object, status_of
from omnienv.server.sessions import NEMO_GYM, Session, SessionManager
from omnienv.server.workers import nemo_gym_cookie

__all__ = [
    "PREFIX",
    "SECRET_ENV",
    "BadCookieError",
    "MissingCookieError",
    "NemoGymRouter",
    "nemo_gym_rows",
    "nemo_gym_tools",
    "nemo_routes",
]

_END = End()
logger = logging.getLogger("omnienv.server")
PREFIX = "/nemo_gym"
SECRET_ENV = "OMNIENV_NEMO_GYM_SECRET"
BASE_ROUTES = ("seed_session", "verify", "close_session", "aggregate_metrics", "reverify_mode")
Endpoint = Callable[[Request], Awaitable[Response]]
KEEP_COOKIE = "nemo_gym_cookie"
"""``request.state`` attribute: the cookie value to (re-)send with the reply."""


class MissingCookieError(SessionError):
    """A call that needs a session came without the cookie ``/seed_session`` set."""

    code = "NO_SESSION_COOKIE"


class BadCookieError(SessionError):
    """The session cookie was not signed by this server: forged, tampered with, or from another one."""

    code = "BAD_SESSION_COOKIE"


register_code(MissingCookieError)
register_code(BadCookieError)
_STATUS: dict[type[OmniEnvError], int] = {MissingCookieError: 401, BadCookieError: 403}


@dataclass(slots=True)
class Rollout:
    """One seeded session's episode, as ``/verify`` needs it."""

    session: Session
    task: Task | str | None
    ledger: EpisodeLedger = field(default_factory=EpisodeLedger)


def _json(value: Any, status: int = 200) -> Response:
    return Response(encode(value), status, media_type="application/json")


def _error(exc: OmniEnvError) -> Response:
    status = _STATUS.get(type(exc)) or status_of(exc)
    return _json({"detail": exc.message, "code": exc.code}, status)


def _guarded(endpoint: Endpoint, router: NemoGymRouter) -> Endpoint:
    """Errors become ``{"detail", "code"}``; every reply on a live session re-sends its cookie.

    NeMo's agents replace their cookie jar with each reply's cookies (``simple_agent`` keeps
    ``api_response.cookies``, as NeMo's own servers re-set the cookie on every response), so a
    reply without the cookie, an error included, would lose the session for the next call.
    """

    async def run(request: Request) -> Response:
        try:
            response = await endpoint(request)
        except OmniEnvError as exc:
            response = _error(exc)
        except Exception as exc:
            response = _error(unexpected(exc))
        cookie = getattr(request.state, KEEP_COOKIE, None)
        if cookie is not None:
            router.set_cookie(response, cookie)
        return response

    run.__name__ = run.__qualname__ = endpoint.__name__
    return run


def tool_reply(blocks: Sequence[Block], is_error: bool, over: bool) -> Response:
    """A tool's reply: the observation's text as the body, the episode's state in headers.

    NeMo's ``simple_agent`` hands the raw body to the model as the ``function_call_output``
    (a string: it cannot carry an image part), so the body is exactly the text the model should
    read, never a JSON wrapper or base64. Images are left out here and counted in
    ``X-Omnienv-Images``; NeMo's ``gymnasium_agent`` gets them as ``input_image`` parts from
    ``/step`` (:mod:`omnienv.dialects.nemo_gym_gymnasium`).
    """
    text = "\n".join(block.text for block in blocks if isinstance(block, TextBlock))
    headers = {"X-Omnienv-Done": "true" if over else "false"}
    images = sum(isinstance(block, ImageBlock) for block in blocks)
    if images:
        headers["X-Omnienv-Images"] = str(images)
    if is_error:
        headers["X-Omnienv-Error"] = "true"
    return Response(text, 200, headers=headers, media_type="text/plain; charset=utf-8")


class NemoGymRouter:
    """NeMo Gym's resources-server routes over a :class:`SessionManager`; one per app."""

    def __init__(self, manager: SessionManager, handler: Handler, secret: str | None = None) -> None:
        self.manager = manager
        self.handler = handler
        self.env_class = manager.env_class
        self.limit = manager.config.max_message_bytes
        key = secret or os.environ.get(SECRET_ENV) or secrets.token_urlsafe(32)
        self.signer = URLSafeSerializer(key, salt="omnienv.nemo_gym.session")
        self.cookie = nemo_gym_cookie(self.env_class.name)
        self.bindings = manager.bindings

    # -- request helpers ----------------------------------------------------------------------

    async def body(self, request: Request) -> dict[str, Any]:
        return await read_json_object(request, self.limit)

    def session_id(self, request: Request) -> str | None:
        """The session id the cookie carries; None without a cookie."""
        raw = request.cookies.get(self.cookie)
        if raw is None:
            return None
        try:
            data = self.signer.loads(raw)
        except BadSignature:
            raise BadCookieError(
                f"the '{self.cookie}' cookie was not signed by this server (forged, altered, or from a "
                "restarted server): POST /seed_session for a new session"
            ) from None
        sid = data.get("session_id") if isinstance(data, dict) else None
        if not isinstance(sid, str):
            raise BadCookieError(f"the '{self.cookie}' cookie holds no session id: POST /seed_session")
        return sid

    def rollout(self, request: Request) -> Rollout:
        sid = self.session_id(request)
        if sid is None:
            raise MissingCookieError(
                f"no '{self.cookie}' cookie: POST /seed_session with a dataset row first, then send back "
                "the cookie it sets with every call"
            )
        rollout = self.live(sid)
        if rollout is None:
            raise SessionNotFoundError(
                f"session '{sid}' is over: it was closed, or reaped after being idle; POST /seed_session"
            )
        setattr(request.state, KEEP_COOKIE, request.cookies[self.cookie])
        return rollout

    def set_cookie(self, response: Response, value: str) -> None:
        response.set_cookie(self.cookie, value, httponly=True, samesite="lax")

    def live(self, sid: str) -> Rollout | None:
        bound = self.bindings.get(NEMO_GYM, sid)
        return bound[1] if bound is not None else None

    # -- the base routes ----------------------------------------------------------------------

    async def seed_session(self, request: Request) -> Response:
        """Start a rollout for a dataset row (``task_id``, ``split``, ``seed``; other keys ignored)."""
        row = await self.body(request)
        reset = parse_reset(row)
        try:
            old = self.session_id(request)
        except BadCookieError:
            old = None  # seeding replaces whatever cookie came along
        if old is not None and (previous := self.live(old)) is not None:
            await self.manager.close(previous.session)
        task = self.manager.task_for(reset)
        session = await self.manager.open(owned=False, family=NEMO_GYM)
        try:
            await self.handler.run(session, reset)
        except BaseException:
            await self.manager.close(session)
            raise
        self.bindings.bind(NEMO_GYM, session.id, session, Rollout(session, task))
        setattr(request.state, KEEP_COOKIE, self.signer.dumps({"session_id": session.id}))
        return _json({})

    async def call_tool(self, request: Request, name: str) -> Response:
        rollout = self.rollout(request)
        arguments = await self.body(request)
        call = ToolCall(name, arguments)
        session = rollout.session
        try:
            result = await self.handler.run(session, call)
            assert isinstance(result, StepResult)
        except EnvironmentFailure as exc:  # a hung or lost step voids the episode: /verify masks it
            rollout.ledger.fail(session.machine.failure or Failure.from_exception(f"tool '{name}'", exc))
            raise
        rollout.ledger.record(result)
        return tool_reply(result.observation.content, result.observation.is_error, result.over)

    async def verify(self, request: Request) -> Response:
        """The episode's reward, echoed with the request (NeMo's ``BaseVerifyResponse``)."""
        rollout = self.rollout(request)
        body = await self.body(request)
        for key in ("responses_create_params", "response"):
            if not isinstance(body.get(key), dict):
                raise MessageValidationError(
                    f"'{key}' must be a JSON object: /verify takes the dataset row plus "
                    '{"response": <the final Responses API object>}'
                )
        ledger = rollout.ledger
        if not ledger.over:  # the agent loop stopped first (its max_steps): end and score the episode
            session = rollout.session
            try:
                ended = await self.handler.run(session, _END)
                assert isinstance(ended, StepResult)
                ledger.record(ended, step=False)
            except EnvironmentFailure as exc:
                ledger.fail(session.machine.failure or Failure.from_exception("end", exc))
        rollout.session.last_active = time.monotonic()
        failure = ledger.failure
        return _json(
            {
                **body,
                "reward": 0.0 if failure else ledger.reward,
                "mask_sample": failure is not None,
                "done": ledger.done,  # the environment's own end, beside NeMo's fields
                "truncated": ledger.truncated,
                "failure_kind": f"omnienv:{failure.kind}" if failure else None,
                "failure_reason": failure.message if failure else None,
            }
        )

    async def close_session(self, request: Request) -> Response:
        """Idempotent: closing a session that is already gone (or never was) succeeds."""
        sid = self.session_id(request)
        rollout = self.live(sid) if sid is not None else None
        if rollout is not None:
            await self.manager.close(rollout.session)  # its binding ends with it
        response = _json({"closed": rollout is not None})
        response.delete_cookie(self.cookie)
        return response

    async def aggregate_metrics(self, request: Request) -> Response:
        body = await self.body(request)
        responses = body.get("verify_responses")
        if not isinstance(responses, list) or not all(isinstance(r, dict) for r in responses):
            raise MessageValidationError("'verify_responses' must be a list of /verify replies")
        return _json(aggregate(responses))

    async def reverify_mode(self, request: Request) -> Response:
        return _json("unsupported")  # /verify reads the live session, so a replay cannot be re-verified

    # -- routes -------------------------------------------------------------------------------

    def tool_endpoint(self, name: str) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            return await self.call_tool(request, name)

        endpoint.__name__ = f"tool_{name}"
        return _guarded(endpoint, self)

    def routes(self) -> list[Route]:
        base = [
            Route("/seed_session", _guarded(self.seed_session, self), methods=["POST"]),
            Route("/verify", _guarded(self.verify, self), methods=["POST"]),
            Route("/close_session", _guarded(self.close_session, self), methods=["POST"]),
            Route("/aggregate_metrics", _guarded(self.aggregate_metrics, self), methods=["POST"]),
            Route("/reverify_mode", _guarded(self.reverify_mode, self), methods=["GET"]),
        ]
        tools = []
        for name in self.env_class.tools:
            if name in BASE_ROUTES:
                logger.warning("NeMo Gym: tool '%s' has the name of a NeMo Gym route; it is not served", name)
                continue
            tools.append(Route(f"/{name}", self.tool_endpoint(name), methods=["POST"]))
        return base + tools


def _taken(routes: Iterable[BaseRoute]) -> set[str]:
    return {path for route in routes if isinstance(path := getattr(route, "path", None), str)}


def nemo_routes(
    manager: SessionManager, handler: Handler, taken: Iterable[BaseRoute] = (), secret: str | None = None
) -> list[BaseRoute]:
    """NeMo Gym's routes at the root (those not already ``taken``) and all of them under ``/nemo_gym``."""
    routes = NemoGymRouter(manager, handler, secret).routes()
    used = _taken(taken)
    root: list[BaseRoute] = []
    for route in routes:
        if route.path in used:
            logger.info("NeMo Gym: %s is an omnienv route; serving it as %s%s", route.path, PREFIX, route.path)
        else:
            root.append(route)
    return [*root, Mount(PREFIX, routes=list(routes))]


# -- metrics ----------------------------------------------------------------------------------


def aggregate(responses: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean reward per task and overall, masked samples left out (NeMo's ``AggregateMetrics`` shape)."""
    groups: dict[Any, list[float]] = {}
    masked = 0
    for reply in responses:
        if reply.get("mask_sample"):
            masked += 1
            continue
        reward = reply.get("reward")
        if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
            raise MessageValidationError(f"every /verify reply needs a finite numeric 'reward', got {reward!r}")
        key = reply.get("_ng_task_index", reply.get("task_id"))
        if key is not None and (isinstance(key, bool) or not isinstance(key, str | int)):
            raise MessageValidationError(f"'_ng_task_index' and 'task_id' must be a string or an integer, got {key!r}")
        groups.setdefault(key, []).append(float(reward))
    rewards = [reward for group in groups.values() for reward in group]
    mean = _mean(rewards) if rewards else None  # every sample masked: no score, never 0
    agent = {
        "mean/reward": mean,
        "max/reward": max(rewards, default=None),
        "min/reward": min(rewards, default=None),
        "num_rollouts": len(responses),
        "num_masked": masked,
    }
    group_level = [
        {"task": key, "mean/reward": _mean(group), "num_rollouts": len(group)} for key, group in groups.items()
    ]
    return {"group_level_metrics": group_level, "agent_metrics": agent, "key_metrics": {"mean/reward": mean}}


def _mean(values: Sequence[float]) -> float:
    """The mean of finite values, finite itself: each is divided first, so no sum overflows."""
    return math.fsum(value / len(values) for value in values)
