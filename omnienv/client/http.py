"""Clients over the stateful HTTP session routes (``/sessions/{id}/...``), async and sync twins.

For places a WebSocket cannot go (some proxies, serverless callers). Each call is one request;
the server keeps the session between them until ``close()`` or its idle timeout. A session the
server no longer knows (reaped when idle, or the server restarted) fails the call that finds it
gone with ``SessionNotFoundError``, and the next ``reset()`` opens a new one, as over ``/ws``.
"""

from __future__ import annotations

from typing import Any

import httpx

from omnienv.client._base import LIST_TOOLS, AsyncClient, BlockingClient, ClientBase, request_bytes
from omnienv.core.errors import OmniEnvError, SessionLostError, SessionNotFoundError
from omnienv.core.tasks import Task
from omnienv.core.threads import to_blocking_thread
from omnienv.core.types import Observation, State, StepResult, ToolCall
from omnienv.protocol.codec import decode

__all__ = ["AsyncHTTPClient", "HTTPClient"]

_JSON = {"content-type": "application/json"}


class _HTTPBase(ClientBase):
    session_id: str | None = None

    def _client_options(self) -> dict[str, Any]:
        timeout = httpx.Timeout(self.timeout, connect=self.connect_timeout)
        return {"base_url": self.base_url, "timeout": timeout, "trust_env": False, "headers": _JSON}

    def _path(self, action: str = "") -> str:
        return f"/sessions/{self.session_id}{action}"

    @staticmethod
    def _raw(response: httpx.Response) -> bytes:
        return response.content

    def _failed(self, exc: httpx.HTTPError) -> SessionLostError:
        return SessionLostError(f"request to {self.base_url} failed: {type(exc).__name__}: {exc}")

    def _forget_if_gone(self, response: httpx.Response) -> httpx.Response:
        """Forget a session the server answers it does not know, so ``reset()`` opens a new one."""
        if response.status_code == 404 and self.session_id is not None:
            try:
                gone = decode(response.content).get("data", {}).get("code") == SessionNotFoundError.code
            except (OmniEnvError, AttributeError):  # not our error frame (a proxy's 404 page)
                gone = False
            if gone:
                self.session_id = None
        return response

    @staticmethod
    def _session_id(response: httpx.Response) -> str:
        if response.status_code != 201:
            ClientBase._data(response.content, "session")  # raises the server's typed error
        return str(response.json()["session_id"])


class AsyncHTTPClient(_HTTPBase, AsyncClient):
    """An environment served at ``url``, one HTTP session, one request per call."""

    _http: httpx.AsyncClient | None = None

    async def open(self) -> None:
        if self.session_id is not None:
            return
        if self._http is None:
            self._http = httpx.AsyncClient(**self._client_options())
        try:
            self.session_id = self._session_id(await self._send("POST", "/sessions"))
            self._on_tools(self._raw(await self._send("POST", self._path("/step"), LIST_TOOLS["data"])))
        except BaseException:
            await self.close()
            raise

    async def reset(
        self, task: Task | str | None = None, seed: int | None = None, split: str | None = None
    ) -> Observation:
        await self.open()
        body = self._reset_request(task, seed, split)["data"]
        response = await self._send("POST", self._path("/reset"), body)
        if self.session_id is None:  # the server no longer knew it: reset on a new session
            await self.open()
            response = await self._send("POST", self._path("/reset"), body)
        return self._on_reset(self._raw(response))

    async def step(self, call: ToolCall) -> StepResult:
        if self.session_id is None:
            raise self._not_connected()
        body = self._step_request(call)["data"]
        return self._on_step(self._raw(await self._send("POST", self._path("/step"), body)))

    async def end(self) -> StepResult:
        """End the episode now and have the server score it (the trainer's cut)."""
        if self.session_id is None:
            raise self._not_connected()
        return self._on_step(self._raw(await self._send("POST", self._path("/end"))))

    async def state(self) -> State:
        if self.session_id is None:
            return State(None, 0)
        return self._on_state(self._raw(await self._send("GET", self._path("/state"))))

    async def close(self) -> None:
        session, self.session_id = self.session_id, None
        http, self._http = self._http, None
        if http is not None:
            try:
                if session is not None:
                    await http.delete(f"/sessions/{session}")
            except httpx.HTTPError:
                pass
            finally:
                await http.aclose()
        if self.container is not None:
            await to_blocking_thread(self._stop_container)

    async def _send(self, method: str, path: str, body: Any = None) -> httpx.Response:
        assert self._http is not None
        try:
            content = request_bytes(body) if body is not None else None
            return self._forget_if_gone(await self._http.request(method, path, content=content))
        except httpx.HTTPError as exc:
            raise self._failed(exc) from exc


class HTTPClient(_HTTPBase, BlockingClient):
    """The blocking twin of :class:`AsyncHTTPClient`."""

    _http: httpx.Client | None = None

    def open(self) -> None:
        if self.session_id is not None:
            return
        if self._http is None:
            self._http = httpx.Client(**self._client_options())
        try:
            self.session_id = self._session_id(self._send("POST", "/sessions"))
            self._on_tools(self._raw(self._send("POST", self._path("/step"), LIST_TOOLS["data"])))
        except BaseException:
            self.close()
            raise

    def reset(self, task: Task | str | None = None, seed: int | None = None, split: str | None = None) -> Observation:
        self.open()
        body = self._reset_request(task, seed, split)["data"]
        response = self._send("POST", self._path("/reset"), body)
        if self.session_id is None:  # the server no longer knew it: reset on a new session
            self.open()
            response = self._send("POST", self._path("/reset"), body)
        return self._on_reset(self._raw(response))

    def step(self, call: ToolCall) -> StepResult:
        if self.session_id is None:
            raise self._not_connected()
        body = self._step_request(call)["data"]
        return self._on_step(self._raw(self._send("POST", self._path("/step"), body)))

    def end(self) -> StepResult:
        """End the episode now and have the server score it (the trainer's cut)."""
        if self.session_id is None:
            raise self._not_connected()
        return self._on_step(self._raw(self._send("POST", self._path("/end"))))

    def state(self) -> State:
        if self.session_id is None:
            return State(None, 0)
        return self._on_state(self._raw(self._send("GET", self._path("/state"))))

    def close(self) -> None:
        session, self.session_id = self.session_id, None
        http, self._http = self._http, None
        if http is not None:
            try:
                if session is not None:
                    http.delete(f"/sessions/{session}")
            except httpx.HTTPError:
                pass
            finally:
                http.close()
        self._stop_container()

    def _send(self, method: str, path: str, body: Any = None) -> httpx.Response:
        assert self._http is not None
        try:
            content = request_bytes(body) if body is not None else None
            return self._forget_if_gone(self._http.request(method, path, content=content))
        except httpx.HTTPError as exc:
            raise self._failed(exc) from exc
