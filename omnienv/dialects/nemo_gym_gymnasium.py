"""NeMo Gym's ``GymnasiumServer`` protocol, for NeMo's ``gymnasium_agent``: images reach the model.

NeMo's ``simple_agent`` turns a tool reply into a string, so a screenshot can only reach the
model as text there. Its ``gymnasium_agent`` instead posts each model response to ``POST /step``
and appends ``info["tool_outputs"]`` to the conversation as ``function_call_output`` items
unchanged, and a ``function_call_output`` may be a list of ``input_text`` / ``input_image``
parts: so here every screenshot reaches the model as an image.

The protocol: ``POST /reset`` with a dataset row (the session cookie is set, as by
``/seed_session``; the row's own prompt is the first observation), ``POST /step`` with the row
plus ``{"response": <the model's Responses API object>}`` (each ``function_call`` is run; the
reply is ``{observation, reward, terminated, truncated, info}``, the reward being that turn's
share of the episode's), and ``POST /close``. A response without a function call ends the
episode (the environment's ``end``). A void episode is no reward at all: ``/step`` answers 503
with the failure, so NeMo's rollout collection records the rollout as failed instead of scoring it.

``gymnasium_agent`` posts to ``/reset`` and ``/step`` at its server's root, where omnienv's own
stateless routes live, so :func:`nemo_gym_app` serves NeMo Gym alone: these routes and the
``simple_agent`` ones (:mod:`omnienv.dialects.nemo_gym`) on one port.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from omnienv.core.env import EnvironmentBase
from omnienv.core.errors import EnvironmentFailure, MessageValidationError
from omnienv.core.threads import to_blocking_thread
from omnienv.core.types import Failure, StepResult, ToolCall
from omnienv.dialects.nemo_gym import KEEP_COOKIE, NemoGymRouter, Rollout, _guarded, _json
from omnienv.dialects.nemo_gym_data import input_content
from omnienv.protocol.messages import End
from omnienv.server.config import ServerConfig
from omnienv.server.handler import Handler
from omnienv.server.sessions import SessionManager

__all__ = ["GymnasiumRouter", "nemo_gym_app"]

_END = End()


class GymnasiumRouter(NemoGymRouter):
    """``/reset``, ``/step`` and ``/close`` on the same cookie sessions as ``/seed_session``."""

    async def reset(self, request: Request) -> Response:
        await self.seed_session(request)
        return _json({"observation": None, "info": {"supports_explicit_close": True}})

    async def step(self, request: Request) -> Response:
        rollout = self.rollout(request)
        body = await self.body(request)
        response = body.get("response")
        output = response.get("output") if isinstance(response, dict) else None
        if not isinstance(output, list):
            raise MessageValidationError(
                "'response' must be the model's Responses API object, with its 'output' list: /step takes "
                'the dataset row plus {"response": ...}'
            )
        calls = [item for item in output if isinstance(item, dict) and item.get("type") == "function_call"]
        before = rollout.ledger.reward
        tool_outputs = []
        for item in calls:
            if rollout.ledger.over:
                break
            result = await self.run_call(rollout, item)
            if result is None:
                break
            tool_outputs.append({"call_id": item.get("call_id"), "output": input_content(result.observation.content)})
        if not calls and not rollout.ledger.over:  # the model answered in words: the episode ends there
            await self.end(rollout)
        ledger = rollout.ledger
        if ledger.failure is not None:
            failure = ledger.failure
            detail = f"the episode is void ({failure.kind}): {failure.message}"
            return _json({"detail": detail, "code": "EPISODE_VOID", "failure": failure.to_dict()}, 503)
        info: dict[str, Any] = {"tool_outputs": tool_outputs, "steps": ledger.steps}
        return _json(
            {
                "observation": None,
                "reward": ledger.reward - before,
                "terminated": ledger.done,
                "truncated": ledger.truncated and not ledger.done,
                "info": info,
            }
        )

    async def run_call(self, rollout: Rollout, item: dict[str, Any]) -> StepResult | None:
        """One function call's result, or None when the environment failed (the episode is void)."""
        name = item.get("name")
        try:
            arguments = json.loads(item.get("arguments") or "{}")
        except (TypeError, ValueError) as exc:
            raise MessageValidationError(f"the arguments of function call {name!r} are not JSON: {exc}") from None
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise MessageValidationError("each function_call needs a 'name' and JSON-object 'arguments'")
        session = rollout.session
        try:
            result = await self.handler.run(session, ToolCall(name, arguments))
            assert isinstance(result, StepResult)
        except EnvironmentFailure as exc:
            rollout.ledger.fail(session.machine.failure or Failure.from_exception(f"tool '{name}'", exc))
            return None
        return rollout.ledger.record(result)

    async def end(self, rollout: Rollout) -> None:
        session = rollout.session
        try:
            ended = await self.handler.run(session, _END)
            assert isinstance(ended, StepResult)
            rollout.ledger.record(ended, step=False)
        except EnvironmentFailure as exc:
            rollout.ledger.fail(session.machine.failure or Failure.from_exception("end", exc))

    async def close(self, request: Request) -> Response:
        response = await self.close_session(request)
        setattr(request.state, KEEP_COOKIE, None)
        return response

    def gymnasium_routes(self) -> list[Route]:
        return [
            Route("/reset", _guarded(self.reset, self), methods=["POST"]),
            Route("/step", _guarded(self.step, self), methods=["POST"]),
            Route("/close", _guarded(self.close, self), methods=["POST"]),
        ]


def nemo_gym_app(env: type[EnvironmentBase], config: ServerConfig | None = None, **overrides: Any) -> Starlette:
    """``env`` as a NeMo Gym resources server alone: ``gymnasium_agent``'s ``/reset`` and ``/step``
    and ``simple_agent``'s routes, on one port. The app's ``state.manager`` is its sessions."""
    config = replace(config or ServerConfig(), **overrides)
    manager = SessionManager(env, config)
    handler = Handler(manager)
    router = GymnasiumRouter(manager, handler)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await to_blocking_thread(env.preflight)
        manager.start()
        try:
            yield
        finally:
            await manager.stop()

    app = Starlette(routes=[*router.gymnasium_routes(), *router.routes()], lifespan=lifespan)
    app.state.manager = manager
    app.state.env_class = env
    return app
