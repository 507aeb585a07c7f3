"""What every client shares, with no I/O: URLs, request frames, reply decoding, error mapping.

The sync and async clients over each transport subclass this and write only their I/O path,
method for method in the same order, so a fix to the protocol lands here once.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit, urlunsplit

from omnienv.core.errors import NotResetError, ProtocolError, SessionLostError, UsageError
from omnienv.core.open_files import make_room_for_files
from omnienv.core.tasks import Task
from omnienv.core.threads import to_blocking_thread
from omnienv.core.types import Observation, State, StepResult, ToolCall, require_tool_call
from omnienv.protocol.codec import decode, encode
from omnienv.protocol.codes import error_from_data
from omnienv.protocol.messages import (
    RemoteTool,
    observation_from_reply,
    reset_request,
    state_from_reply,
    step_request,
    step_result_from_reply,
    tools_from_reply,
)

if TYPE_CHECKING:
    from omnienv.client.container import Container

__all__ = ["AsyncClient", "BlockingClient", "ClientBase"]

REPLY_LIMIT = 1 << 30  # replies may carry screenshots; the server bounds what it sends
LIST_TOOLS = {"type": "step", "data": {"type": "list_tools"}}
GET_STATE = {"type": "state"}
CLOSE = {"type": "close"}


def _urls(url: str) -> tuple[str, str]:
    """(http base URL, ws URL of /ws) from any of http(s)://host:port[/ws] or ws(s)://..."""
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
    except ValueError:  # a malformed host, such as an unclosed IPv6 bracket
        parts = None
    if parts is None or parts.scheme not in ("http", "https", "ws", "wss") or not parts.netloc:
        raise UsageError(f"expected a server URL like http://127.0.0.1:8000, got {url!r}")
    secure = parts.scheme in ("https", "wss")
    path = parts.path.rstrip("/")
    if path.endswith("/ws"):
        path = path[: -len("/ws")]
    http = urlunsplit(("https" if secure else "http", parts.netloc, path, "", ""))
    ws = urlunsplit(("wss" if secure else "ws", parts.netloc, f"{path}/ws", parts.query, ""))
    return http, ws


def request_bytes(request: Any) -> bytes:
    """A request as JSON; one that JSON cannot hold (a set among a call's arguments) is the
    caller's :class:`UsageError`, raised before anything is sent, so the session goes on."""
    try:
        return encode(request)
    except TypeError as exc:
        raise UsageError(
            f"the request cannot be sent as JSON ({exc}): a tool call's arguments may hold strings, numbers, "
            "booleans, None, lists and dicts"
        ) from None


class ClientBase:
    """A remote environment's face: ``name``, ``tools``, and the protocol's frames and replies."""

    container: Container | None = None
    """The container this client started (``from_docker_image``): stopped when the client closes."""

    def __init__(self, url: str, *, timeout: float | None = 600.0, connect_timeout: float = 10.0) -> None:
        self.base_url, self.ws_url = _urls(url)
        self.name: str = urlsplit(self.base_url).netloc
        self.tools: dict[str, RemoteTool] = {}
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        make_room_for_files()  # a trainer may hold a connection per environment, thousands of them

    @classmethod
    def _from_image(cls, image: str, options: dict[str, Any]) -> Self:
        """A client (not yet connected) of a new container of ``image``, which it stops when it closes.

        ``options`` holds the client's own options and :func:`start_container`'s (taken out here)."""
        from omnienv.client.container import start_container

        started = {
            key: options.pop(key)
            for key in ("env", "port", "network", "ready_timeout", "server_options")
            if key in options
        }
        container = start_container(image, **started)
        try:
            client = cls(container.url, **options)
        except BaseException:
            container.stop()
            raise
        client.container = container
        return client

    def _stop_container(self) -> None:
        container, self.container = self.container, None
        if container is not None:
            container.stop()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r}, env={self.name!r})"

    # -- requests -----------------------------------------------------------------------------

    @staticmethod
    def _reset_request(task: Task | str | None, seed: int | None, split: str | None = None) -> dict[str, Any]:
        """``split`` as the in-process ``reset`` takes it: the split ``seed`` draws a task from."""
        if isinstance(task, Task):
            return reset_request(task.id, seed, task.split or None)
        return reset_request(task, seed, split)

    def _step_request(self, call: ToolCall) -> dict[str, Any]:
        return step_request(require_tool_call(call, self.name, self.tools))

    @staticmethod
    def _encode(request: dict[str, Any]) -> str:
        return request_bytes(request).decode()

    # -- replies ------------------------------------------------------------------------------

    @staticmethod
    def _data(raw: str | bytes, expected: str) -> dict[str, Any]:
        frame = decode(raw, REPLY_LIMIT)
        kind = frame.get("type")
        data = frame.get("data")
        if kind == "error":
            raise error_from_data(data if isinstance(data, dict) else {})
        if kind != expected or not isinstance(data, dict):
            raise ProtocolError(f"expected a '{expected}' reply, got {str(frame)[:200]}")
        return data

    def _on_tools(self, raw: str | bytes) -> None:
        name, tools = tools_from_reply(self._data(raw, "observation"))
        self.tools = tools
        if name:
            self.name = name

    def _on_reset(self, raw: str | bytes) -> Observation:
        return observation_from_reply(self._data(raw, "observation"))

    def _on_step(self, raw: str | bytes) -> StepResult:
        return step_result_from_reply(self._data(raw, "observation"))

    def _on_state(self, raw: str | bytes) -> State:
        return state_from_reply(self._data(raw, "state"))

    # -- failures -----------------------------------------------------------------------------

    def _not_connected(self) -> NotResetError:
        return NotResetError(f"{self.name}: the session is closed; call reset() to open a new one")

    def _lost(self, cause: BaseException) -> SessionLostError:
        detail = getattr(getattr(cause, "rcvd", None), "reason", "") or str(cause) or type(cause).__name__
        return SessionLostError(f"lost the connection to {self.ws_url}: {detail}")

    def _timed_out(self) -> SessionLostError:
        return SessionLostError(
            f"no reply from {self.base_url} within {self.timeout:g} s; the connection was dropped so "
            "later replies cannot be mismatched (the server closes the session)"
        )


class AsyncClient(ClientBase):
    """How every async client is opened and closed around its own ``open`` and ``close``."""

    async def open(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    @classmethod
    async def connect(cls, url: str, **options: Any) -> Self:
        client = cls(url, **options)
        await client.open()
        return client

    @classmethod
    async def from_docker_image(cls, image: str, **options: Any) -> Self:
        """Start ``image`` (``env``, ``port``, ``network``, ``ready_timeout``, ``server_options`` as
        for :func:`~omnienv.client.container.start_container`), open the session, and stop the
        container on :meth:`close`."""
        client = await to_blocking_thread(cls._from_image, image, options)
        try:
            await client.open()
        except BaseException:
            await client.close()  # and so stops the container
            raise
        return client

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class BlockingClient(ClientBase):
    """The blocking twin of :class:`AsyncClient`."""

    def open(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    @classmethod
    def connect(cls, url: str, **options: Any) -> Self:
        client = cls(url, **options)
        client.open()
        return client

    @classmethod
    def from_docker_image(cls, image: str, **options: Any) -> Self:
        """Start ``image``, open the session, and stop the container on :meth:`close` (see
        :meth:`AsyncClient.from_docker_image`)."""
        client = cls._from_image(image, options)
        try:
            client.open()
        except BaseException:
            client.close()  # and so stops the container
            raise
        return client

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
