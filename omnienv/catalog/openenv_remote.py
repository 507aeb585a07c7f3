"""Any OpenEnv server, by URL, as an omnienv environment: ``openenv+http://host:port``.

It speaks OpenEnv's ``/ws`` session protocol (one WebSocket, so one server session, per omnienv
instance; frames ``{"type": "reset"|"step"|"close", "data": ...}``), with the ``websockets``
library: openenv itself need not be installed. The tools are read once, when the class is made:
the server's MCP tools when a ``{"type": "list_tools"}`` step lists some, else one ``act`` tool
with the Action schema from ``GET /schema``.

An error frame about the action (``VALIDATION_ERROR``) is the agent's mistake; any other error
frame, a lost connection, a timeout or a frame outside the protocol (not JSON, not an object, a
reward that is no finite number) is infrastructure's: :class:`OpenEnvServerError`, flagged
``env_error``. Frames and the ``/schema`` reply are bounded in size and time, ``/schema`` follows
no redirect, and no message or name repeats the credentials a URL holds. The server must allow as
many concurrent sessions as instances are open (OpenEnv's ``max_concurrent_envs``).
"""

from __future__ import annotations

import base64
import importlib
import json
import re
import time
import urllib.parse
import urllib.request
from functools import cache
from typing import Any, ClassVar
from urllib.parse import urlsplit

from omnienv.catalog import _wire
from omnienv.catalog._foreign import class_name
from omnienv.catalog._openenv_shared import OpenEnvBase, Payload, tool_specs
from omnienv.core import EnvironmentFailure, ToolError, UnknownEnvironmentError

__all__ = ["SCHEME", "OpenEnvServerError", "RemoteOpenEnv", "environment", "is_openenv_url"]

SCHEME = "openenv+"
_URL = re.compile(r"^openenv\+(https?|wss?)://[^/\s]+(/\S*)?$")
MESSAGE_TIMEOUT_S = 60.0
OPEN_TIMEOUT_S = 10.0
ERROR_CHARS = 500
_MESSAGE_TOO_BIG = 1009
"""The close code a WebSocket sends when a frame is over its ``max_size``."""


def is_openenv_url(name: str) -> bool:
    """``openenv+http://host:port`` (or https, ws, wss; a path when the app is mounted under one)."""
    return bool(_URL.match(name))


class OpenEnvServerError(EnvironmentFailure):
    """The OpenEnv server failed: an error frame the agent did not cause, a frame outside the
    protocol, a lost connection or no reply in time."""


def _endpoints(url: str) -> tuple[str, str]:
    """The server's http(s) base URL and its ``/ws`` URL."""
    base = url.removeprefix(SCHEME).rstrip("/")
    http = re.sub(r"^ws", "http", base)
    return http, re.sub(r"^http", "ws", http) + "/ws"


class _Session:
    """One OpenEnv session: a WebSocket to ``/ws``, request then reply."""

    def __init__(self, ws_url: str) -> None:
        connect = importlib.import_module("websockets.sync.client").connect
        self.where = _wire.public(ws_url)
        try:
            # entered at once: the socket lives as long as this session, closed by close()
            limits = {"open_timeout": OPEN_TIMEOUT_S, "max_size": _wire.MAX_REPLY_BYTES, "proxy": None}
            self.socket = connect(ws_url, **limits).__enter__()
        except Exception as exc:
            reason = _wire.redacted(str(exc), ws_url)[:ERROR_CHARS]
            raise EnvironmentFailure(f"cannot reach the OpenEnv server at {self.where}: {reason}") from exc

    def _frame(self, kind: str) -> dict[str, Any]:
        """The server's reply to a ``kind`` request, or :class:`OpenEnvServerError` saying why none."""
        what = f"the OpenEnv server at {self.where}, answering {kind}"
        try:
            raw = self.socket.recv(timeout=MESSAGE_TIMEOUT_S)
        except TimeoutError:
            raise OpenEnvServerError(f"{what}: no reply within {MESSAGE_TIMEOUT_S:g} s") from None
        except Exception as exc:  # the connection closed, by the server or by a frame over the limit
            if getattr(getattr(exc, "sent", None), "code", None) == _MESSAGE_TOO_BIG:
                raise _wire.too_large(what, OpenEnvServerError) from None
            raise OpenEnvServerError(f"{what}: the connection was lost: {type(exc).__name__}: {exc}") from exc
        frame = _wire.decode(raw, what, OpenEnvServerError)
        if not isinstance(frame, dict) or not isinstance(frame.get("data") or {}, dict):
            raise OpenEnvServerError(f"{what}: expected {{'type': ..., 'data': {{...}}}}, got {str(raw)[:200]!r}")
        return frame

    def ask(self, kind: str, data: dict[str, Any]) -> Payload:
        try:
            self.socket.send(json.dumps({"type": kind, "data": data}))
        except Exception as exc:
            raise OpenEnvServerError(f"the OpenEnv server at {self.where} is gone: {type(exc).__name__}") from exc
        frame = self._frame(kind)
        body: dict[str, Any] = frame.get("data") or {}
        if frame.get("type") == "error":
            message, code = str(body.get("message", "")), str(body.get("code", ""))
            if code == "VALIDATION_ERROR" and kind == "step":
                errors = "; ".join(str(e.get("msg", e)) for e in body.get("errors") or () if isinstance(e, dict))
                raise ToolError(f"invalid action: {errors or message}")
            raise OpenEnvServerError(
                f"the OpenEnv server refused the {kind}: {message[:ERROR_CHARS]} (code: {code[:ERROR_CHARS]})"
            )
        return body

    def close(self) -> None:
        try:
            self.socket.send(json.dumps({"type": "close"}))
        except Exception:  # already gone: closing is all that is left
            pass
        self.socket.close()


class RemoteOpenEnv(OpenEnvBase):
    """An OpenEnv server reached over its ``/ws`` protocol."""

    extras = ("server",)
    ws_url: ClassVar[str]
    _session: _Session | None = None

    def open_backend(self) -> None:
        if self._session is None:
            self._session = _Session(self.ws_url)

    def send_reset(self, seed: int) -> Payload:
        assert self._session is not None
        try:
            return self._session.ask("reset", {"seed": seed})
        except Exception:
            self._drop()  # a broken socket is not reused: the next reset reconnects
            raise

    def send_step(self, action: dict[str, Any]) -> Payload:
        if self._session is None:
            raise EnvironmentFailure("the connection to the OpenEnv server is closed")
        try:
            return self._session.ask("step", action)
        except ToolError:
            raise
        except Exception:
            self._drop()
            raise

    def _drop(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            try:
                session.socket.close()
            except Exception:  # closing a dead socket
                pass

    def teardown(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a hop: ``/schema`` is read from the server named, nowhere else."""

    def redirect_request(self, *args: Any) -> None:
        return None


_SCHEMA_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def _action_schema(http: str) -> dict[str, Any]:
    """The Action's JSON Schema from ``GET /schema``: bounded in size and in total time."""
    what = f"GET /schema on the OpenEnv server at {_wire.public(http)}"
    deadline, body = time.monotonic() + MESSAGE_TIMEOUT_S, bytearray()
    request = urllib.request.Request(f"{_wire.public(http)}/schema")  # urllib reads user:pw@ as the host
    userinfo = urlsplit(http).netloc.rpartition("@")[0]
    if userinfo:  # sent as the WebSocket's handshake sends it
        credentials = base64.b64encode(urllib.parse.unquote(userinfo).encode()).decode()
        request.add_header("Authorization", f"Basic {credentials}")
    try:
        with _SCHEMA_OPENER.open(request, timeout=OPEN_TIMEOUT_S) as response:
            while chunk := response.read1(2**16):
                body += chunk
                if len(body) > _wire.MAX_REPLY_BYTES:
                    raise _wire.too_large(what, OpenEnvServerError)
                if time.monotonic() > deadline:
                    raise OpenEnvServerError(f"{what}: the reply did not end within {MESSAGE_TIMEOUT_S:g} s")
    except (OSError, ValueError) as exc:  # refused, a redirect or an error status (HTTPError), a bad URL
        raise OpenEnvServerError(f"{what} failed: {_wire.redacted(str(exc), http)[:ERROR_CHARS]}") from exc
    schemas = _wire.decode(bytes(body), what, OpenEnvServerError)
    action = schemas.get("action") if isinstance(schemas, dict) else None
    if not isinstance(action, dict):
        raise OpenEnvServerError(f"{what}: no Action schema (an object under 'action') in {bytes(body[:200])!r}")
    return action


@cache
def environment(url: str) -> type[RemoteOpenEnv]:
    """The omnienv class for the OpenEnv server at ``url``, its tools read from the server now."""
    if not is_openenv_url(url):
        raise UnknownEnvironmentError(f"'{url}' is not an OpenEnv server URL: write openenv+http://host:port")
    http, ws_url = _endpoints(url)
    shown = _wire.public(http)  # names, descriptions and messages never carry the URL's credentials
    try:
        probe = _Session(ws_url)
    except EnvironmentFailure as exc:
        raise UnknownEnvironmentError(f"{exc.message}: start it, or check the host and port") from exc
    try:
        probe.ask("reset", {})
        try:
            listed = probe.ask("step", {"type": "list_tools"}).get("observation", {}).get("tools")
        except (ToolError, OpenEnvServerError):  # a plain action server: its schema says the action
            listed = None
        mcp_tools = listed if isinstance(listed, list) and listed else None
        schema = None if mcp_tools is not None else _action_schema(http)
    except Exception as exc:  # a server that is not OpenEnv's, or one that broke while asked
        reason = _wire.redacted(str(exc), http)[:ERROR_CHARS]
        raise UnknownEnvironmentError(f"cannot read the tools of the OpenEnv server at {shown}: {reason}") from exc
    finally:
        probe.close()
    namespace = {
        "name": class_name(f"openenv/{shown.split('://', 1)[1]}"),
        "description": f"The OpenEnv server at {shown}.",
        "target": url,
        "mcp": mcp_tools is not None,
        "ws_url": ws_url,
        "__module__": __name__,
        "__doc__": f"The OpenEnv server at {shown}, over /ws.",
    }
    cls: type[RemoteOpenEnv] = type(
        "RemoteOpenEnv_" + re.sub(r"\W", "_", shown.split("://", 1)[1]), (RemoteOpenEnv,), namespace
    )
    cls.tools = tool_specs(mcp_tools, schema)
    return cls
