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
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from omnienv.core import EnvironmentFailure

__all__ = ["OrsConnection", "OrsServerError", "SessionClient"]

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 120.0
"""Between two bytes of a reply: ORS servers ping a running call every 10 s."""
STARTING_DEADLINE_S = 600.0
"""How long a session may stay "starting" (its environment's ``setup()``) before it is a failure."""
MAX_RETRY_AFTER_S = 5.0


class OrsServerError(EnvironmentFailure):
    """The ORS server could not be reached, failed, or answered outside the protocol."""


def _detail(response: httpx.Response) -> str:
    """FastAPI's ``{"detail": ...}`` (what ORS servers send with an error), else the body."""
    text = response.text
    try:
        body = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])[:500]
    return text[:500]


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
        self.base_url = base_url
        timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
        self.http = httpx.Client(base_url=base_url, timeout=timeout, trust_env=False)

    def close(self) -> None:
        self.http.close()

    def _send(self, method: str, path: str, body: Any, headers: dict[str, str]) -> httpx.Response:
        try:
            return self.http.request(method, path, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise OrsServerError(f"{method} {path} on the ORS server at {self.base_url} failed: {exc!r}") from exc

    def _check(self, method: str, path: str, response: httpx.Response) -> None:
        if response.is_success:
            return
        raise OrsServerError(
            f"the ORS server at {self.base_url} answered {method} {path} with {response.status_code}: "
            f"{_detail(response)}"
        )

    def json(self, method: str, path: str, body: Any = None, sid: str | None = None, *, wait: bool = False) -> Any:
        """The JSON reply; ``wait`` sends again while the session is starting (nothing ran)."""
        headers = {"X-Session-ID": sid} if sid else {}
        deadline = time.monotonic() + STARTING_DEADLINE_S
        response = self._send(method, path, body, headers)
        while wait and _starting(response, deadline):
            response = self._send(method, path, body, headers)
        self._check(method, path, response)
        try:
            return response.json()
        except ValueError as exc:
            raise OrsServerError(f"{method} {path}: the ORS server's reply is not JSON: {response.text[:200]}") from exc

    def stream(self, path: str, body: Any, sid: str | None = None) -> dict[str, Any] | str:
        """POST ``path`` and read its SSE reply: the ``end`` event's JSON, or the ``task_id``
        event's data when the stream ends with an empty ``end`` (``/create_session``)."""
        headers = {"Accept": "text/event-stream", **({"X-Session-ID": sid} if sid else {})}
        deadline = time.monotonic() + STARTING_DEADLINE_S
        while True:
            try:
                with self.http.stream("POST", path, json=body, headers=headers) as response:
                    if _starting(response, deadline):
                        continue  # the server never reached the environment: nothing ran
                    if not response.is_success:
                        response.read()
                        self._check("POST", path, response)
                    return self._read_events(path, _sse_events(response.iter_lines()))
            except httpx.HTTPError as exc:
                raise OrsServerError(f"POST {path} on the ORS server at {self.base_url} failed: {exc!r}") from exc

    def _read_events(self, path: str, events: Iterator[tuple[str, str]]) -> dict[str, Any] | str:
        task_id, chunks = "", []
        for event, data in events:
            if event == "task_id":
                task_id = data.strip()
            elif event == "chunk":
                chunks.append(data)
            elif event == "error":
                raise OrsServerError(f"the ORS server reported an error during POST {path}: {data}")
            elif event == "end":
                chunks.append(data)
                text = "".join(chunks)
                if not text:
                    return task_id
                try:
                    reply = json.loads(text)
                except ValueError as exc:
                    raise OrsServerError(f"POST {path}: the final event is not JSON: {text[:200]}") from exc
                if not isinstance(reply, dict):
                    raise OrsServerError(f"POST {path}: expected a JSON object, got {text[:200]}")
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
