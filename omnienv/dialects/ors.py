"""ORS (Open Reward Standard, the ``openreward`` SDK's wire protocol): REST + SSE routes on our app.

The routes follow ``openreward.environments.Server``, so the SDK's own client
(``EnvironmentsAPI(...).get(name, variant=name, base_url=URL)``) drives any omnienv environment:

- discovery: ``GET /list_environments``, ``GET /version``, ``GET /{env}/tools``, ``GET /{env}/splits``,
  ``POST /{env}/tasks|num_tasks|task|task_range``;
- a session: ``POST /create_session`` (SSE, mints the id), ``POST /create`` with ``X-Session-ID``
  (binds a task and resets), ``GET /{env}/prompt``, ``POST /{env}/call`` (SSE: ``task_id`` then
  ``end`` with ``{"ok", "output": {blocks, metadata, reward, finished}}``; a void step is
  ``reward: null`` with ``finished: true``), ``POST /ping``, ``POST /delete``;
- the two platform questions the SDK asks of one environment (``GET /v1/environments/...``:
  required secrets, task difficulty), answered by :func:`~omnienv.dialects.ors_wire.platform_routes`.

``/{env}/...`` routes are also served without the ``/{env}`` prefix (what the SDK sends when no
``variant`` is given), except ``/splits``, which is omnienv's own route: pass ``variant=`` to list
splits. Each ORS session owns one of the server's sessions, so capacity and the idle reaper apply
(``/ping`` keeps it alive). Session ids are the server's only: ``/create`` takes an id that
``/create_session`` minted and no session has used yet, and refuses any other. Task specs sent
to clients are ``Task.to_dict()``: never the answer; ``/create`` finds the task again by its ``id``.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from omnienv.core.errors import (
    ActionError,
    EnvironmentFailure,
    EpisodeOverError,
    MessageValidationError,
    OmniEnvError,
    SessionNotFoundError,
    TaskError,
    UnknownToolError,
)
from omnienv.core.ledger import EpisodeLedger
from omnienv.core.tasks import Task
from omnienv.core.types import Observation, StepResult, ToolCall
from omnienv.dialects.ors_wire import (
    SessionGoneError,
    StreamError,
    call_output,
    guarded,
    json_response,
    ors_blocks,
    ors_split_type,
    platform_routes,
    refusal,
    refusal_reason,
    sse,
)
from omnienv.protocol.codec import encode
from omnienv.protocol.messages import Reset, parse_reset
from omnienv.server.handler import Handler, unexpected
from omnienv.server.http import read_json_object
from omnienv.server.sessions import ORS, Session, SessionManager

__all__ = ["OrsRouter", "ors_blocks", "ors_routes", "ors_split_type"]

Endpoint = Callable[[Request], Awaitable[Response]]
MINTED_MEMORY = 16_384
"""How many ids minted by ``/create_session`` and not yet used wait for their ``/create``."""
MINTED_TTL = 3600.0
"""Seconds a minted id stays valid for ``/create`` (the server's idle timeout, when it has one)."""
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@dataclass(slots=True)
class OrsSession:
    """What ORS adds to one of our sessions: the prompt, the episode's ledger, the last replies."""

    session: Session
    task: Task | None
    prompt: list[dict[str, Any]]
    ledger: EpisodeLedger = field(default_factory=EpisodeLedger)
    replies: OrderedDict[str, bytes] = field(default_factory=OrderedDict)
    """Replies of finished calls by ``task_id``: a client re-POSTing after a dropped stream gets
    the same reply instead of running the tool twice."""


class OrsRouter:
    """ORS sessions on top of a :class:`SessionManager`; one instance per app."""

    def __init__(self, manager: SessionManager, handler: Handler) -> None:
        self.manager = manager
        self.handler = handler
        self.env_class = manager.env_class
        self.name = self.env_class.name
        self.bindings = manager.bindings
        self.minted: OrderedDict[str, float] = OrderedDict()
        """Ids minted by ``/create_session``, not yet used by ``/create``: id -> when (monotonic)."""
        self.minted_ttl = manager.config.idle_timeout or MINTED_TTL
        self.limit = manager.config.max_message_bytes
        self.listings: dict[str, bytes] = {}
        tools = [
            {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}
            for spec in self.env_class.tools.values()
        ]
        self.tools_body = encode(
            {
                "tools": tools,
                "terminal_tool": None,
                "supports_score_group": False,
                "message_block_types": None,
            }
        )

    # -- request helpers ----------------------------------------------------------------------

    async def body(self, request: Request) -> dict[str, Any]:
        return await read_json_object(request, self.limit)

    @staticmethod
    def sid_of(request: Request) -> str:
        sid = (request.headers.get("x-session-id") or "").strip()
        if not sid:
            raise MessageValidationError(
                "X-Session-ID header is required: get an id from POST /create_session, then POST /create"
            )
        return sid

    def lookup(self, request: Request) -> OrsSession:
        sid = self.sid_of(request)
        bound = self.bindings.get(ORS, sid)
        if bound is None:
            if self.bindings.ended(ORS, sid):
                raise SessionGoneError(f"session '{sid}' was deleted or reaped after being idle; open a new one")
            if sid in self.minted:  # e.g. the SDK's Environment.get_prompt(task), which sends no task
                raise SessionNotFoundError(
                    f"session '{sid}' has no task yet: POST /create with its task first (with the SDK, "
                    "env.session(task=...).get_prompt() rather than env.get_prompt(task))"
                )
            raise SessionNotFoundError(
                f"no ORS session '{sid}': POST /create_session for an id, then POST /create with a task"
            )
        ors: OrsSession = bound[1]
        ors.session.last_active = time.monotonic()
        return ors

    def tasks(self, split: Any) -> Sequence[Task]:
        if not isinstance(split, str):
            known = ", ".join(self.env_class.splits) or "none"
            raise TaskError(f"{self.name} has no split {split!r}; its splits: {known}")
        return self.env_class.task_index().split(split)

    def task_at(self, split: Any, index: Any) -> Task:
        tasks = self.tasks(split)
        if isinstance(index, bool) or not isinstance(index, int):
            raise MessageValidationError(f"'index' must be an integer, got {index!r}")
        if not -len(tasks) <= index < len(tasks):
            raise TaskError(f"index {index} is out of range: split '{split}' has {len(tasks)} tasks")
        return tasks[index]

    def check_env_name(self, body: dict[str, Any]) -> None:
        name = body.get("env_name")
        if name is not None and name != self.name:
            raise TaskError(f"this server serves environment '{self.name}', not {name!r}")

    # -- discovery ----------------------------------------------------------------------------

    async def list_environments(self, request: Request) -> Response:
        return json_response([self.name])

    async def version(self, request: Request) -> Response:
        from omnienv import __version__

        return json_response({"version": __version__, "build_sha": None})

    async def tools(self, request: Request) -> Response:
        return Response(self.tools_body, media_type="application/json")

    async def splits(self, request: Request) -> Response:
        return json_response([{"name": split, "type": ors_split_type(split)} for split in self.env_class.splits])

    async def list_tasks(self, request: Request) -> Response:
        body = await self.body(request)
        split = body.get("split")
        tasks = self.tasks(split)  # refuses a split that is none of ours
        assert isinstance(split, str)
        listing = self.listings.get(split)
        if listing is None:  # tasks never change: encode each split's listing once
            listing = self.listings[split] = encode(
                {"tasks": [task.to_dict() for task in tasks], "env_name": self.name}
            )
        return Response(listing, media_type="application/json")

    async def num_tasks(self, request: Request) -> Response:
        body = await self.body(request)
        return json_response({"num_tasks": len(self.tasks(body.get("split")))})

    async def get_task(self, request: Request) -> Response:
        body = await self.body(request)
        task = self.task_at(body.get("split"), body.get("index"))
        return json_response({"task": task.to_dict(), "env_name": self.name})

    async def task_range(self, request: Request) -> Response:
        body = await self.body(request)
        tasks = self.tasks(body.get("split"))
        start, stop = body.get("start"), body.get("stop")
        for key, value in (("start", start), ("stop", stop)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise MessageValidationError(f"'{key}' must be an integer or null, got {value!r}")
        chosen = tasks[slice(start, stop)]
        return json_response({"tasks": [task.to_dict() for task in chosen], "env_name": self.name})

    # -- sessions -----------------------------------------------------------------------------

    async def create_session(self, request: Request) -> Response:
        """Mint an id only: the environment is made by ``/create``, when the task is known."""
        sid = self.manager.new_id()  # with --workers N, one this worker owns: /create comes back here
        now = time.monotonic()
        minted = self.minted
        minted[sid] = now
        while minted and (len(minted) > MINTED_MEMORY or next(iter(minted.values())) < now - self.minted_ttl):
            minted.popitem(last=False)

        async def events() -> AsyncIterator[dict[str, str]]:
            yield {"event": "task_id", "data": sid}
            yield {"event": "end", "data": ""}

        return sse(events())

    def resolve_task(self, body: dict[str, Any]) -> Task | None:
        spec = body.get("task_spec")
        if spec is not None:
            if not isinstance(spec, dict) or not isinstance(spec.get("id"), str):
                raise MessageValidationError(
                    "'task_spec' must be a task as listed by POST /{env}/tasks (an object with its 'id')"
                )
            split = spec.get("split")
            if not isinstance(split, str):
                split = None  # the id's own prefix, else the first split
            return self.env_class.task_index().find(spec["id"], split)
        if "split" in body or "index" in body:
            return self.task_at(body.get("split"), body.get("index"))
        if self.env_class.splits:
            raise MessageValidationError('send {"task_spec": {...}} or {"split": ..., "index": ...}')
        return None  # an environment without tasks

    async def create(self, request: Request) -> Response:
        sid = self.sid_of(request)
        body = await self.body(request)
        self.check_env_name(body)
        if self.bindings.get(ORS, sid) is not None:
            raise MessageValidationError(f"session '{sid}' already exists: mint a new id with /create_session")
        task = self.resolve_task(body)
        minted_at = self.minted.pop(sid, None)
        if minted_at is None or minted_at < time.monotonic() - self.minted_ttl:
            shown = sid if len(sid) <= 80 else sid[:80] + "..."
            raise SessionNotFoundError(
                f"session id '{shown}' was not minted by this server (or was already used, or expired): ORS "
                "session ids come only from POST /create_session; mint one there, then POST /create with it"
            )
        try:
            session = await self.manager.open(owned=False, family=ORS)
        except BaseException:
            self.minted[sid] = minted_at  # not used: the client may retry /create with it
            raise
        try:
            reset = Reset(parse_reset(body).seed, task.id if task else None, task.split if task else None)
            observation = await self.handler.run(session, reset)
            assert isinstance(observation, Observation)
        except BaseException:
            await self.manager.close(session)
            raise
        self.bindings.bind(ORS, sid, session, OrsSession(session, task, ors_blocks(observation.content)))
        return json_response({"sid": sid})

    async def prompt(self, request: Request) -> Response:
        return json_response(self.lookup(request).prompt)

    async def messages(self, request: Request) -> Response:
        return json_response([{"role": "user", "blocks": self.lookup(request).prompt, "detail": None}])

    async def task_tools(self, request: Request) -> Response:
        self.lookup(request)
        return Response(self.tools_body, media_type="application/json")

    async def ping(self, request: Request) -> Response:
        self.lookup(request)
        return json_response({"status": "ok"})

    async def delete(self, request: Request) -> Response:
        sid = self.sid_of(request)
        self.minted.pop(sid, None)
        bound = self.bindings.get(ORS, sid)
        if bound is not None:
            await self.manager.close(bound[0])  # its name ends with it
        return json_response({"sid": sid})

    # -- tool calls ---------------------------------------------------------------------------

    async def call(self, request: Request) -> Response:
        ors = self.lookup(request)
        body = await self.body(request)
        name, arguments = body.get("name"), body.get("input", {})
        task_id = body.get("task_id") if isinstance(body.get("task_id"), str) else None
        if task_id is not None and task_id in ors.replies:
            replay = ors.replies[task_id]

            async def replayed() -> AsyncIterator[dict[str, str]]:
                yield {"event": "task_id", "data": task_id}
                yield {"event": "end", "data": replay.decode()}

            return sse(replayed())
        if not isinstance(name, str) or not name:
            raise MessageValidationError('\'name\' must be the name of a tool, e.g. {"name": "guess", "input": {...}}')
        if arguments is None:
            arguments = {}
        call_id = task_id or str(uuid.uuid4())

        async def events() -> AsyncIterator[dict[str, str]]:
            yield {"event": "task_id", "data": call_id}
            try:
                reply = await self.call_reply(ors, name, arguments)
            except StreamError as exc:
                yield {"event": "error", "data": str(exc)}
                return
            ors.replies[call_id] = reply
            while len(ors.replies) > 4:
                ors.replies.popitem(last=False)
            yield {"event": "end", "data": reply.decode()}

        return sse(events(), ping=10)

    async def call_reply(self, ors: OrsSession, name: str, arguments: Any) -> bytes:
        """The ``end`` event's JSON: a tool output, or ``ok: false`` with ORS's reason."""
        if ors.ledger.over:
            return refusal(f"'{name}' was not run: the episode has finished; open a new session", "episode_finished")
        if not isinstance(arguments, dict):
            return refusal(
                f"'input' of tool '{name}' must be a JSON object, got {type(arguments).__name__}", "bad_input_shape"
            )
        call = ToolCall(name, arguments)
        try:
            result = await self.handler.run(ors.session, call)
            assert isinstance(result, StepResult)
        except EpisodeOverError as exc:
            return refusal(exc.message, "episode_finished")
        except (UnknownToolError, ActionError) as exc:
            return refusal(exc.message, "input_validation")
        except EnvironmentFailure as exc:  # the SDK reads an `error` event as "the session is dead"
            raise StreamError(exc.message) from exc
        except OmniEnvError as exc:
            return refusal(exc.message, "error", exc.code)
        except Exception as exc:
            raise StreamError(unexpected(exc).message) from exc
        ors.ledger.record(result)
        refused = refusal_reason(result)
        if refused is not None:  # the environment's own check, answered ORS's way
            return refusal(result.observation.text, refused)
        return call_output(result)

    # -- routes -------------------------------------------------------------------------------

    def routes(self) -> list[Route]:
        per_env: list[tuple[str, Endpoint, str]] = [
            ("/tools", self.tools, "GET"),
            ("/splits", self.splits, "GET"),
            ("/tasks", self.list_tasks, "POST"),
            ("/num_tasks", self.num_tasks, "POST"),
            ("/task", self.get_task, "POST"),
            ("/task_range", self.task_range, "POST"),
            ("/prompt", self.prompt, "GET"),
            ("/messages", self.messages, "GET"),
            ("/task_tools", self.task_tools, "GET"),
            ("/call", self.call, "POST"),
        ]
        routes = [
            Route("/list_environments", guarded(self.list_environments), methods=["GET"]),
            Route("/version", guarded(self.version), methods=["GET"]),
            Route("/create_session", guarded(self.create_session), methods=["POST"]),
            Route("/create", guarded(self.create), methods=["POST"]),
            Route("/ping", guarded(self.ping), methods=["POST"]),
            Route("/delete", guarded(self.delete), methods=["POST"]),
            Route("/delete_session", guarded(self.delete), methods=["POST"]),
        ]
        routes += [Route(f"/{self.name}{path}", guarded(fn), methods=[method]) for path, fn, method in per_env]
        # Bare paths: what the SDK sends without a variant. /splits stays omnienv's own route.
        routes += [Route(path, guarded(fn), methods=[method]) for path, fn, method in per_env if path != "/splits"]
        return routes + platform_routes(self.name)


def ors_routes(manager: SessionManager, handler: Handler) -> list[Route]:
    """The ORS routes for ``manager``'s environment, to add to the app's route list."""
    return OrsRouter(manager, handler).routes()
