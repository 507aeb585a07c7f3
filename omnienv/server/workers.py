"""Which worker owns a session: the one routing rule of ``omnienv serve --workers N``.

A server of N worker processes shares one listening socket, so a request lands on whichever
worker accepted its connection, and each session lives in exactly one worker's memory. The rule
that joins the two is here and nowhere else:

- **the owner of a session name is** ``crc32(name) % N`` (:meth:`WorkerPlace.owner`), a hash
  every process computes alike, for every route family's names;
- **a worker makes only names it owns** (:meth:`WorkerPlace.mint` draws uuid4s until one hashes
  to it: N draws on average), so a session is created where it will live, by whichever worker
  the creating request reached; the MCP SDK picks its own ids, so the client gets an alias of
  each that hashes to the worker holding it (:meth:`WorkerPlace.alias`);
- **a request that names a session** (:func:`session_name`) is served by that name's owner: any
  other worker forwards it whole over the owner's private Unix socket
  (:mod:`omnienv.server.forward`); a request naming none is served where it landed.

The names a request can carry, one line each in :func:`session_name`: ``/sessions/{id}`` and
``/operator/sessions/{id}``, ``?session_id=`` (``/ws`` attaching to a session, ``/mcp`` in
agent-only mode: :func:`query_session_id`), ``mcp-session-id`` (the MCP transport),
``X-Session-ID`` (ORS), the session id signed into NeMo Gym's cookie for this environment
(:func:`nemo_gym_cookie`), and ``params.session_id`` of OpenEnv's JSON-RPC on ``/mcp`` (the only
one read from a body). Each carrier is read only on the paths whose route reads it (an
``X-Session-ID`` on ``/mcp`` or an ``mcp-session-id`` on an ORS route is not what that route
looks up, so it routes nothing), and parsed as that route parses it (the first of a repeated
``session_id`` or header, the last of a repeated cookie).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import uuid
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import orjson

__all__ = [
    "FORWARDED_HEADER",
    "VIA_HEADER",
    "WORKER_HEADER",
    "WorkerPlace",
    "nemo_gym_cookie",
    "query_session_id",
    "rpc_session_name",
    "session_name",
]

WORKER_HEADER = b"x-omnienv-worker"
"""On every reply of a multi-worker server: the index of the worker that served the request."""
VIA_HEADER = b"x-omnienv-via"
"""On a forwarded request's reply: the index of the worker that received and forwarded it."""
FORWARDED_HEADER = b"x-omnienv-forwarded"
"""Marks a request one worker forwarded to another; honoured only on a worker's private Unix
socket, with the server's own random token as its value, so it cannot be forged from outside."""
NEMO_GYM_COOKIE = "omnienv___"
"""The prefix of NeMo Gym's session cookies (:func:`nemo_gym_cookie`)."""
_SESSION_PATH = re.compile(r"/(?:operator/)?sessions/([^/]+)")
_MCP_SESSION, _ORS_SESSION, _COOKIE = b"mcp-session-id", b"x-session-id", b"cookie"


@dataclass(frozen=True, slots=True)
class WorkerPlace:
    """Which of the server's ``count`` workers this process is, and where its siblings listen.

    ``sockets`` is the server's private directory (mode 0700, made by the supervisor) holding
    each worker's Unix socket, the way requests reach a session's owner.
    """

    index: int
    count: int
    sockets: str

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"worker {self.index} of {self.count}: need 0 <= index < count")

    def owner(self, name: str) -> int:
        """The index of the worker owning session ``name``: the rule, for every route family."""
        return zlib.crc32(name.encode("utf-8", "surrogateescape")) % self.count

    def mint(self) -> str:
        """A new session id (a uuid4) that this worker owns."""
        while True:
            name = str(uuid.uuid4())
            if self.owner(name) == self.index:
                return name

    def alias(self, name: str) -> str:
        """``name`` (an id someone else picked: the MCP SDK's) made into one this worker owns.

        The SDK's ids are hex, so ``name-k`` for the first ``k`` that hashes here is unambiguous
        and :meth:`unalias` turns it back; the same ``name`` always gets the same alias.
        """
        k = 0
        while self.owner(alias := f"{name}-{k}") != self.index:
            k += 1
        return alias

    @staticmethod
    def unalias(alias: str) -> str:
        return alias.rpartition("-")[0] or alias

    def socket_path(self, index: int) -> str:
        return os.path.join(self.sockets, f"worker-{index}.sock")

    def share(self, total: int) -> int:
        """This worker's part of a server-wide limit (``--max-sessions``): the parts add up to it."""
        if total < self.count:
            raise ValueError(f"max_sessions ({total}) must be at least the number of workers ({self.count})")
        return total // self.count + (self.index < total % self.count)


def nemo_gym_cookie(env: str) -> str:
    """The name of NeMo Gym's session cookie for environment ``env`` (:mod:`omnienv.dialects.nemo_gym`).

    One per environment: a client's cookie jar sends every cookie of a host, whatever its port,
    so cookies of other environments' servers on the same host come along and must be told apart."""
    return NEMO_GYM_COOKIE + env


def session_name(scope: dict[str, Any], cookie: str) -> tuple[str | None, bool]:
    """``(name, read_body)``: the session a request names (None: none), and whether the name
    may be in its body instead (OpenEnv's JSON-RPC on ``POST /mcp``: see :func:`rpc_session_name`).

    ``cookie`` is the name of this environment's NeMo Gym cookie (:func:`nemo_gym_cookie`); it is
    read as the app reads it (Starlette's parser, every ``Cookie`` header, the last value of a
    name winning), so the router never follows a cookie the app would not."""
    path = scope["path"]
    if "sessions/" in path and (match := _SESSION_PATH.match(path)) is not None:
        return match.group(1), False
    # Only the carriers this path's route reads: a client that keeps one transport's header on
    # its requests to another (one HTTP client for MCP and ORS) still reaches the session it names.
    mcp = path == "/mcp"
    header = _MCP_SESSION if mcp else _ORS_SESSION
    cookies: list[bytes] = []
    for key, value in scope["headers"]:
        if key == header and path != "/ws":
            return value.decode("latin-1").strip(), False
        if key == _COOKIE:
            cookies.append(value)
    if (name := query_session_id(scope)) is not None:
        return name, False
    if cookies and not mcp and (name := _cookie_session(cookies, cookie)) is not None:
        return name, False
    return None, mcp and scope["type"] == "http" and scope.get("method") == "POST"


def query_session_id(scope: dict[str, Any]) -> str | None:
    """The request's ``?session_id=`` (``/ws`` attaching, ``/mcp`` in agent-only mode), the first
    when it is given twice: read here for the router and for the routes alike, so a request is
    served by the owner of the very session the route then looks up."""
    query = scope.get("query_string") or b""
    if b"session_id=" not in query:
        return None
    values = parse_qs(query.decode("latin-1")).get("session_id")
    return values[0] if values else None


def rpc_session_name(body: bytes) -> str | None:
    """``params.session_id`` of a JSON-RPC request (OpenEnv's ``tools/call``, ``openenv/session/close``)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    params = data.get("params") if isinstance(data, dict) else None
    name = params.get("session_id") if isinstance(params, dict) else None
    return name if isinstance(name, str) and name else None


def _cookie_session(headers: list[bytes], cookie: str) -> str | None:
    """The session id in the NeMo Gym cookie named ``cookie``, read without checking its signature:
    a forged one only picks which worker refuses it (the owner checks the signature, as a lone
    server does)."""
    from starlette.requests import cookie_parser  # the app's own reading; loaded by the app already

    found: dict[str, str] = {}
    for header in headers:
        found.update(cookie_parser(header.decode("latin-1")))
    signed = found.get(cookie)
    return _signed_session(signed) if signed is not None else None


def _signed_session(value: str) -> str | None:
    payload = value.rpartition(".")[0]  # itsdangerous: base64url(json) "." signature
    compressed = payload.startswith(".")  # a leading dot: the payload is zlib-compressed
    payload = payload.lstrip(".")
    try:
        raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        if compressed:
            raw = zlib.decompressobj().decompress(raw, 4096)
        data = orjson.loads(raw)
    except (binascii.Error, ValueError, zlib.error):
        return None
    name = data.get("session_id") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None
