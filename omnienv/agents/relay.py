"""The shell relay: the one door from a harness's command executor into its episode's sandbox.

A harness is given a URL, ``http://127.0.0.1:PORT/episodes/TOKEN``, and nothing else of the
episode: ``POST .../run`` with ``{"command", "timeout"}`` runs the command with the environment's
shell tool, in the episode's session on the omnienv server, and answers ``{"output", "exit_code",
"over", "submitted", "note"}``. Why a relay rather than the session's own URL:

- the harness can run commands and nothing more: no reset, no other tool, no other session, no
  score (the token is a random secret per episode, and the relay listens on loopback only);
- every command the harness runs passes here, so the runner records each one as a step of the
  episode's trajectory, and sees the episode end (the environment ended it, or the harness
  submitted) without asking;
- mini-swe-agent's ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` convention, or any harness's
  submit marker: a command whose output starts with the marker line (exit code 0) calls the
  environment's submit tool, so an agent that submits ends the episode by its own decision.

The relay runs in the runner's event loop (:func:`serving`), beside the episodes it serves, so each
episode's HTTP client is used on the loop that made it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from omnienv.agents.shell import ShellTool
from omnienv.client.http import AsyncHTTPClient
from omnienv.core import EpisodeOverError, Failure, OmniEnvError, StepResult, ToolCall
from omnienv.rollout.trajectory import Step
from omnienv.server.run import uvicorn_config

__all__ = ["EpisodeShell", "Relay", "serving"]

_BODY_LIMIT = 4 * 1024 * 1024
KEEP_ALIVE_S = 60.0
"""How often a session is touched while its harness runs (see :meth:`EpisodeShell.keep_alive`)."""


@dataclass(eq=False)
class EpisodeShell:
    """One episode's shell, as the relay serves it: its session, the steps taken, and its end."""

    client: AsyncHTTPClient
    tool: ShellTool
    submit_marker: str | None = None
    steps: list[Step] = field(default_factory=list)
    over: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once no command can run any more: the episode ended, failed, or was submitted."""
    failure: Failure | None = None
    """The relay's own failure to reach the session (a step's failure is in its result)."""
    submitted: bool = False
    note: str | None = None
    deadline: float | None = None
    """When the harness's time is up (the event loop's clock): no command's time limit runs past it."""
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def run(self, command: str, timeout: float | None) -> dict[str, Any]:
        """Run one command in the session; one at a time, as a shell does."""
        async with self._lock:
            if self.over.is_set():
                return self._answer("", 1)
            left = None if self.deadline is None else self.deadline - asyncio.get_running_loop().time()
            call = self.tool.call(command, timeout, left)
            result = await self._step(call)
            if result is None:
                return self._answer("", 126)
            if result.failure is not None:  # the environment broke: no output of the command's to show
                self._end("the environment failed; the episode is void")
                return self._answer("", 126)
            parsed = self.tool.parse(result.observation.text, result.observation.is_error)
            if result.over:
                self._end("the episode is over" + (": its turn limit is reached" if result.truncated else ""))
            elif self._is_submission(parsed.output, parsed.exit_code):
                await self._submit(parsed.output.lstrip().partition("\n")[2])
            return self._answer(parsed.output, parsed.exit_code)

    async def _step(self, call: ToolCall) -> StepResult | None:
        started = time.perf_counter()
        try:
            result = await self.client.step(call)
        except EpisodeOverError:
            self._end("the episode is over")
            return None
        except OmniEnvError as exc:  # the session is unreachable: the episode is void
            self.failure = Failure.from_exception(f"the shell relay's call of '{call.name}'", exc)
            self._end("the environment failed")
            return None
        self.steps.append(Step(call, result, time.perf_counter() - started))
        return result

    async def settle(self) -> None:
        """The harness is gone: let the command it left running finish and be recorded (the
        environment bounds it by its own timeout), and start no other. Until then the session is
        busy, and ending it would fail as though the environment had broken.

        ``over`` is set before the lock is taken: the commands the harness sent at once and left
        waiting for the lock then find the episode over, instead of each running in turn after
        the harness died (past its time limit, a marker among them submitting after the end)."""
        self.over.set()
        async with self._lock:
            pass

    async def keep_alive(self) -> None:
        """Touch the session (``state()``) every ``KEEP_ALIVE_S`` until the episode is over, so that
        a server's idle timeout (``--idle-timeout``, 600 s by default) never reaps a session whose
        harness is only slow between commands: the reaped session's ``end()`` failed, and the
        agent's episode was voided as the environment's failure. Never while a command runs (the
        session takes one request at a time), and never after :meth:`settle`."""
        while not self.over.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.over.wait(), KEEP_ALIVE_S)
            async with self._lock:
                if self.over.is_set():
                    return
                with contextlib.suppress(OmniEnvError):  # a lost session is the next step's to find
                    await self.client.state()

    def _is_submission(self, output: str, exit_code: int) -> bool:
        if self.submit_marker is None or exit_code != 0:
            return False
        lines = output.lstrip().splitlines()
        return bool(lines) and lines[0].strip() == self.submit_marker

    async def _submit(self, text: str) -> None:
        """The agent submitted: the environment's submit tool ends the episode (where it has one;
        else the runner's ``end()`` scores it once the harness exits)."""
        self.submitted = True
        call = self.tool.submit_call(text)
        result = await self._step(call) if call is not None else None
        self._end(result.observation.text if result is not None and result.failure is None else "submitted")

    def _end(self, note: str) -> None:
        self.note = self.note or note
        self.over.set()

    def _answer(self, output: str, exit_code: int) -> dict[str, Any]:
        over = self.over.is_set()
        note = self.note if over else None
        return {"output": output, "exit_code": exit_code, "over": over, "submitted": self.submitted, "note": note}


class Relay:
    """The relay's episodes by token, and its ASGI app."""

    def __init__(self) -> None:
        self.shells: dict[str, EpisodeShell] = {}
        self.app = Starlette(routes=[Route("/episodes/{token}/run", self._run, methods=["POST"])])

    def open(self, shell: EpisodeShell) -> str:
        """Serve ``shell``; returns its token (the last part of its URL)."""
        token = secrets.token_urlsafe(18)
        self.shells[token] = shell
        return token

    def close(self, token: str) -> None:
        self.shells.pop(token, None)

    async def _run(self, request: Request) -> JSONResponse:
        shell = self.shells.get(request.path_params["token"])
        if shell is None:
            return JSONResponse({"error": "no such episode (it is over, or the token is wrong)"}, 404)
        body = bytearray()
        async for chunk in request.stream():  # read no more than the limit, whatever the length says
            body += chunk
            if len(body) > _BODY_LIMIT:
                return JSONResponse({"error": f"the command is over {_BODY_LIMIT} bytes"}, 413)
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            return JSONResponse({"error": "the body is not JSON"}, 400)
        command, timeout = (data.get("command"), data.get("timeout")) if isinstance(data, dict) else (None, None)
        if not isinstance(command, str) or (timeout is not None and _seconds(timeout) is None):
            return JSONResponse({"error": 'expected {"command": str, "timeout": a finite number or null}'}, 400)
        try:
            command.encode()
        except UnicodeEncodeError:  # JSON may carry a lone surrogate half; no shell or wire can
            return JSONResponse({"error": "the command is not valid Unicode (a lone surrogate)"}, 400)
        return JSONResponse(await shell.run(command, None if timeout is None else _seconds(timeout)))


def _seconds(value: Any) -> float | None:
    """A time limit as a float; None for what is none (a boolean, NaN or infinity, which Python's
    JSON reads, an integer too large for a float, which raised OverflowError: a 500)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) else None


class _Server(uvicorn.Server):
    """uvicorn in the caller's loop, leaving its signal handlers alone: Ctrl-C stops the run (and
    its ``finally`` blocks reap the harnesses), not just this server."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


@asynccontextmanager
async def serving(app: Any, host: str = "127.0.0.1", timeout: float = 10.0) -> AsyncIterator[str]:
    """Serve ``app`` on a free port in the running event loop; yields its ``http://`` URL."""
    server = _Server(uvicorn_config(app, host, 0, lifespan="off"))
    task = asyncio.create_task(server.serve())
    loop = asyncio.get_running_loop()
    try:
        deadline = loop.time() + timeout
        while not server.started:
            if task.done():
                raise RuntimeError("the shell relay failed to start: its log above says why")
            if loop.time() > deadline:
                raise RuntimeError(f"the shell relay did not start within {timeout:g} s")
            await asyncio.sleep(0.005)
        yield f"http://{host}:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, timeout + 5)
