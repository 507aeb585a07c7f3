"""Foreign environment servers that answer what no well-behaved one would, for the importers' tests.

Each is a bare ASGI app served on 127.0.0.1 by :func:`omnienv.server.running` (a thread, stopped
when the block ends). Discovery is answered correctly, so an environment class can be made; what a
step gets back is the test's to choose, through ``answer``: the raw bytes of the reply, or a
coroutine that sends its own (trickled, huge, cut off). Every loop a server runs is bounded in
count, so a client that stops reading never leaves one running.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from omnienv.core import StepResult

Send = Callable[[dict[str, Any]], Awaitable[None]]
Answer = bytes | str | Callable[[Send], Awaitable[None]] | None


def sse(*events: tuple[str, str]) -> bytes:
    """An event stream of ``(event, data)`` pairs."""
    return b"".join(f"event: {event}\ndata: {data}\n\n".encode() for event, data in events)


def ors_output(reward: str = "1.0", finished: str = "true", text: str = '"moved"') -> bytes:
    """A ``/call`` reply whose JSON fields are written raw: ``NaN``, ``"1"``, ``[1]`` all go."""
    output = f'{{"blocks": [{{"type": "text", "text": {text}}}], "reward": {reward}, "finished": {finished}}}'
    return sse(("task_id", "s1"), ("end", f'{{"ok": true, "output": {output}}}'))


async def trickle(send: Send, head: bytes, count: int, gap_s: float) -> None:
    """``head``, then one byte every ``gap_s`` seconds, ``count`` times at most."""
    await send({"type": "http.response.body", "body": head, "more_body": True})
    for _ in range(count):
        await asyncio.sleep(gap_s)
        await send({"type": "http.response.body", "body": b" ", "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def flood(send: Send, head: bytes, megabytes: int) -> None:
    """``head``, then up to ``megabytes`` MiB of one endless line (sent into the void once the
    client hangs up: uvicorn drops what a closed connection is sent)."""
    await send({"type": "http.response.body", "body": head, "more_body": True})
    chunk = b"x" * 2**20
    for _ in range(megabytes):
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _json(send: Send, value: Any, status: int = 200, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    start = {"type": "http.response.start", "status": status}
    await send({**start, "headers": [(b"content-type", b"application/json"), *(headers or [])]})
    await send({"type": "http.response.body", "body": json.dumps(value).encode()})


async def _lifespan(receive: Any, send: Send) -> None:
    while (await receive())["type"] != "lifespan.shutdown":
        await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})


@dataclass
class HostileOrs:
    """An ORS server with one environment, ``game``, one tool, ``move``, and one task, ``t0``."""

    answer: Answer = field(default_factory=ors_output)
    tools: list[Any] = field(default_factory=lambda: [{"name": "move", "description": "Move.", "input_schema": None}])
    calls: int = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] == "lifespan":
            return await _lifespan(receive, send)
        while (await receive()).get("more_body"):
            pass
        path = scope["path"]
        listings = {
            "/list_environments": ["game"],
            "/game/tools": {"tools": self.tools},
            "/game/splits": [{"name": "train"}],
            "/game/tasks": {"tasks": [{"id": "t0"}]},
            "/version": {"version": "1"},
            "/create": {},
            "/delete": {},
            "/game/prompt": [{"type": "text", "text": "Move."}],
        }
        if path in listings:
            return await _json(send, listings[path])
        stream = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": stream})
        if path == "/create_session":
            return await send({"type": "http.response.body", "body": sse(("task_id", "s1"), ("end", ""))})
        self.calls += 1
        await _answer(self.answer, send)


async def _answer(answer: Answer, send: Send) -> None:
    if callable(answer):
        await answer(send)
    elif answer is not None:  # None: hang up without a body
        await send({"type": "http.response.body", "body": answer.encode() if isinstance(answer, str) else answer})


ACTION_SCHEMA = json.dumps({"action": {"type": "object", "properties": {"move": {"type": "string"}}}})


def openenv_observation(reward: str = "1.0", done: str = "true", text: str = "moved") -> str:
    """An OpenEnv step reply whose ``reward`` and ``done`` are written raw."""
    data = f'{{"observation": {{"text": "{text}"}}, "reward": {reward}, "done": {done}}}'
    return f'{{"type": "observation", "data": {data}}}'


@dataclass
class HostileOpenEnv:
    """An OpenEnv server (``/ws`` and ``/schema``) with one ``act`` tool taking ``move``.

    ``answer`` is the raw text of each step's reply frame (None: close the socket instead);
    ``schema`` is ``GET /schema``'s reply, a coroutine that sends its own body, or bytes.
    """

    answer: str | None = field(default_factory=openenv_observation)
    schema: Answer = ACTION_SCHEMA
    schema_status: int = 200
    schema_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    open_sockets: int = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] == "lifespan":
            return await _lifespan(receive, send)
        if scope["type"] == "http":
            await receive()
            headers = [(b"content-type", b"application/json"), *self.schema_headers]
            await send({"type": "http.response.start", "status": self.schema_status, "headers": headers})
            return await _answer(self.schema, send)
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        self.open_sockets += 1
        try:
            await self._session(receive, send)
        finally:
            self.open_sockets -= 1

    async def _session(self, receive: Any, send: Send) -> None:
        for _ in range(1000):
            message = await receive()
            if message["type"] != "websocket.receive":
                return
            request = json.loads(message["text"])
            if request["type"] == "reset":
                reply = {"type": "observation", "data": {"observation": {"text": "go"}, "reward": None, "done": False}}
                await send({"type": "websocket.send", "text": json.dumps(reply)})
            elif request["type"] == "step" and request["data"].get("type") == "list_tools":
                refused = {"type": "error", "data": {"message": "no MCP here", "code": "VALIDATION_ERROR"}}
                await send({"type": "websocket.send", "text": json.dumps(refused)})
            elif request["type"] == "step" and self.answer is not None:
                await send({"type": "websocket.send", "text": self.answer})
            else:  # close, or a step answered by hanging up
                return await send({"type": "websocket.close", "code": 1000 if request["type"] == "close" else 1011})


def assert_flagged(result: StepResult, state: Any, says: str) -> None:
    """A step the foreign server broke: flagged as the environment's failure saying ``says``, with a
    bounded message, masked (no reward), and the episode over."""
    assert result.failure is not None and result.failure.kind == "env_error", result
    assert says in result.failure.message and len(result.failure.message) < 1000, result.failure.message
    assert result.reward == 0.0 and result.over and state.reward is None  # masked, never scored
