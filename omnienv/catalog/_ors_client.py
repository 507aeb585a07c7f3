"""ORS's wire protocol from the client side, over httpx: discovery, one session, SSE replies.

The shapes are the ``openreward`` SDK's (``openreward.api._session``, ``api/environments/client.py``):

- discovery: ``GET /list_environments``, ``GET /version``, ``GET /{env}/tools``,
  ``GET /{env}/splits``, ``POST /{env}/tasks {split}`` (or ``/num_tasks`` where a server only
  indexes its tasks);
- a session: ``POST /create_session`` answers SSE ``task_id`` (the session id) then ``end``;
  ``POST /create`` with ``X-Session-ID`` and ``{split, index, env_name}`` binds a task;
  ``GET /{env}/prompt`` gives the prompt blocks; ``POST /{env}/call {name, input}`` answers SSE:
  ``task_id``, then ``chunk`` events and a final ``end`` whose joined data is
  ``{"ok": true, "output": {blocks, metadata, reward, finished}}`` or
  ``{"ok": false, "error", "reason"}``, or an ``error`` event when the tool raised on the server;
  ``POST /delete`` ends it.

A server still setting an environment up answers 503 with ``X-Backend-State: starting``; nothing
ran, so the request is sent again (the server itself holds each one up to 25 s) until a deadline.
Every other failure (unreachable, a 5xx, a 4xx about the session, a reply of the wrong shape, an
``error`` event) is :class:`OrsServerError`: infrastructure's, never the agent's. A ``/call`` is
never sent twice, so a tool never runs twice.

Every reply is bounded (:mod:`omnienv.catalog._wire`): at most ``MAX_REPLY_BYTES`` read, within a
deadline for the whole reply (a server that trickles a byte a second never times out between two
bytes), redirects not followed; messages name the server without the credentials its URL may hold.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx

from omnienv.catalog import _wire
from omnienv.core import EnvironmentFailure

__all__ = ["OrsConnection", "OrsServerError", "SessionClient"]

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 120.0
"""Between two bytes of a reply: ORS servers ping a running call every 10 s."""
STARTING_DEADLINE_S = 600.0
"""How long a session may stay "starting" (its environment's ``setup()``) before it is a failure."""
MAX_RETRY_AFTER_S = 5.0
REPLY_DEADLINE_S = 120.0
"""The most a whole JSON reply (discovery, a session's set-up) may take once it is sent."""
CALL_DEADLINE_S = 900.0
"""The most a whole event stream (one tool call, pings included) may take."""
DETAIL_CHARS = 500


class OrsServerError(EnvironmentFailure):
    """The ORS server could not be reached, failed, or answered outside the protocol."""


def _detail(body: bytes) -> str:
    """FastAPI's ``{"detail": ...}`` (what ORS servers send with an error), else the body's start."""
    try:
        parsed = _wire.decode(body, "", OrsServerError)
    except OrsServerError:
        parsed = None
    if isinstance(parsed, dict) and "detail" in parsed:
        return str(parsed["detail"])[:DETAIL_CHARS]
    return body[:DETAIL_CHARS].decode("utf-8", "replace")


def _chunks(response: httpx.Response, what: str, deadline: float) -> Iterator[bytes]:
    """The reply's bytes as they come, ended by ``OrsServerError`` past ``MAX_REPLY_BYTES`` or the
    deadline (checked at each chunk; a silent server is cut by the read timeout between them)."""
    size = 0
    for chunk in response.iter_raw():
        size += len(chunk)
        if size > _wire.MAX_REPLY_BYTES:
            raise _wire.too_large(what, OrsServerError)
        if time.monotonic() > deadline:
            raise OrsServerError(f"{what}: the reply did not end in time (still coming after {size:,} bytes)")
        yield chunk


def _lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """The text lines of ``chunks`` (an event stream: UTF-8, lines ended by LF, CRLF or CR, a CRLF
    possibly split between two chunks); a long line is joined once, not copied at every chunk."""
    pieces: list[bytes] = []
    after_cr = False
    for chunk in chunks:
        if after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF whose CR ended the last chunk
        after_cr = chunk.endswith(b"\r")
        *ended, rest = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        for part in ended:
            yield b"".join([*pieces, part]).decode("utf-8", "replace")
            pieces = []
        pieces.append(rest)
    if any(pieces):
        yield b"".join(pieces).decode("utf-8", "replace")


def _starting(response: httpx.Response, deadline: float) -> bool:
    """Whether the server is still setting the session up (503 ``starting``) and there is time to
    ask again; waits the ``Retry-After`` it asks for (at most a few seconds) before saying so."""
    if response.status_code != 503 or response.headers.get("x-backend-state") != "starting":
        return False
    if time.monotonic() >= deadline:
        return False
    try:
        pause = float(response.headers.get("retry-after", "0"))
    except ValueError:
        pause = 0.0
    time.sleep(min(max(pause, 0.0), MAX_RETRY_AFTER_S))
    return True


def _sse_events(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """``(event, data)`` pairs of a server-sent event stream; comments (pings) are skipped."""
    event: str | None = None
    data: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if event is not None:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
    if event is not None:
        yield event, "\n".join(data)


class OrsConnection:
    """One HTTP connection pool to an ORS server, with the server's error rules applied."""

    def __init__(self, base_url: str) -> None:
        self._url = base_url
        self.base_url = _wire.public(base_url)
        """The server as messages name it (no credentials)."""
        timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
        # identity: the bytes counted are the bytes kept (a compressed reply could inflate a thousandfold)
        self.http = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            trust_env=False,
            follow_redirects=False,
            headers={"Accept-Encoding": "identity"},
        )

    def close(self) -> None:
        self.http.close()

    def _failed(self, method: str, path: str, exc: httpx.HTTPError) -> OrsServerError:
        return OrsServerError(
            f"{method} {path} on the ORS server at {self.base_url} failed: {type(exc).__name__}: "
            f"{_wire.redacted(str(exc), self._url)[:DETAIL_CHARS]}"
        )

    def _send(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[httpx.Response, bytes]:
        """The response and its whole (bounded) body."""
        what = f"{method} {path} on the ORS server at {self.base_url}"
        try:
            with self.http.stream(method, path, json=body, headers=headers) as response:
                data = b"".join(_chunks(response, what, time.monotonic() + REPLY_DEADLINE_S))
        except httpx.HTTPError as exc:
            raise self._failed(method, path, exc) from exc
        return response, data

    def _check(self, method: str, path: str, response: httpx.Response, body: bytes) -> None:
        if response.is_success:
            return
        raise OrsServerError(
            f"the ORS server at {self.base_url} answered {method} {path} with {response.status_code}: {_detail(body)}"
        )

    def json(self, method: str, path: str, body: Any = None, sid: str | None = None, *, wait: bool = False) -> Any:
        """The JSON reply; ``wait`` sends again while the session is starting (nothing ran)."""
        headers = {"X-Session-ID": sid} if sid else {}
        deadline = time.monotonic() + STARTING_DEADLINE_S
        response, data = self._send(method, path, body, headers)
        while wait and _starting(response, deadline):
            response, data = self._send(method, path, body, headers)
        self._check(method, path, response, data)
        return _wire.decode(data, f"{method} {path} on the ORS server at {self.base_url}", OrsServerError)

    def stream(self, path: str, body: Any, sid: str | None = None) -> dict[str, Any] | str:
        """POST ``path`` and read its SSE reply: the ``end`` event's JSON, or the ``task_id``
        event's data when the stream ends with an empty ``end`` (``/create_session``)."""
        headers = {"Accept": "text/event-stream", **({"X-Session-ID": sid} if sid else {})}
        deadline = time.monotonic() + STARTING_DEADLINE_S
        what = f"POST {path} on the ORS server at {self.base_url}"
        while True:
            try:
                with self.http.stream("POST", path, json=body, headers=headers) as response:
                    if _starting(response, deadline):
                        continue  # the server never reached the environment: nothing ran
                    chunks = _chunks(response, what, time.monotonic() + CALL_DEADLINE_S)
                    if not response.is_success:
                        self._check("POST", path, response, b"".join(chunks))
                    return self._read_events(path, _sse_events(_lines(chunks)))
            except httpx.HTTPError as exc:
                raise self._failed("POST", path, exc) from exc

    def _read_events(self, path: str, events: Iterator[tuple[str, str]]) -> dict[str, Any] | str:
        task_id, chunks = "", []
        for event, data in events:
            if event == "task_id":
                task_id = data.strip()
            elif event == "chunk":
                chunks.append(data)
            elif event == "error":
                raise OrsServerError(f"the ORS server reported an error during POST {path}: {data[:DETAIL_CHARS]}")
            elif event == "end":
                chunks.append(data)
                text = "".join(chunks)
                if not text:
                    return task_id
                reply = _wire.decode(text, f"POST {path}: the final event", OrsServerError)
                if not isinstance(reply, dict):
                    raise OrsServerError(f"POST {path}: expected a JSON object, got {text[:200]!r}")
                return reply
        raise OrsServerError(f"POST {path}: the ORS server's event stream ended before its result")


class SessionClient:
    """One ORS session on one environment of a server: created, prompted, called, deleted."""

    def __init__(self, connection: OrsConnection, env_name: str) -> None:
        self.connection = connection
        self.env_name = env_name
        self.sid: str | None = None

    def open(self, split: str, index: int) -> list[Any]:
        """Mint a session for task ``index`` of ``split`` and return its prompt blocks."""
        sid = self.connection.stream("/create_session", {})
        if not isinstance(sid, str) or not sid:
            raise OrsServerError("POST /create_session gave no session id (no task_id event)")
        self.sid = sid
        body = {"split": split, "index": index, "env_name": self.env_name}
        self.connection.json("POST", "/create", body, sid)
        prompt = self.connection.json("GET", f"/{self.env_name}/prompt", sid=sid, wait=True)
        if not isinstance(prompt, list):
            raise OrsServerError(f"GET /{self.env_name}/prompt: expected a list of blocks, got {prompt!r:.200}")
        return prompt

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one tool: ORS's reply, ``{"ok": ..., "output"|"error": ...}``."""
        if self.sid is None:
            raise OrsServerError("the ORS session is closed")
        reply = self.connection.stream(f"/{self.env_name}/call", {"name": name, "input": arguments}, self.sid)
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            raise OrsServerError(f"POST /{self.env_name}/call: expected {{'ok': ...}}, got {reply!r:.200}")
        return reply

    def delete(self) -> None:
        """End the session on the server; a server already gone has nothing left to end."""
        sid, self.sid = self.sid, None
        if sid is None:
            return
        try:
            self.connection.json("POST", "/delete", {}, sid)
        except OrsServerError:
            pass
