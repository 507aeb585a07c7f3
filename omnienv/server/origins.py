"""Origin and Host checks on every route: a web page in the user's browser cannot drive the server.

A page from any site can make the browser connect to ``127.0.0.1`` (a WebSocket, a form, a
``fetch`` in ``no-cors`` mode) and, by DNS rebinding, even read replies under its own name. So each
HTTP request and WebSocket handshake passes three rules, here and nowhere else:

- ``Host`` names a loopback host (``localhost``, ``127.x.x.x``, ``[::1]``; any port), the host the
  server was bound to, or one given with ``--allow-host`` (``ServerConfig.allow_hosts``);
- an ``Origin``, when sent (browsers send it; httpx, websockets, OpenEnv's and the MCP SDK's
  clients do not), is a loopback origin or one given with ``--allow-origin``;
- a state-changing request (POST, PUT, PATCH, DELETE) with a body has a JSON ``Content-Type``, and
  none is ``text/plain`` or a form type, even empty: those a page may send cross-site without the
  browser asking first (a CORS "simple" request).

Refusals are ``{"type": "error", "data": {"code", "message"}}``: 403 ``ORIGIN_REFUSED``, 415
``UNSUPPORTED_MEDIA_TYPE``. ``*`` in either list allows any host or origin.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from omnienv.core.errors import InvalidValueError, OmniEnvError, ProtocolError, UsageError
from omnienv.protocol.codec import encode
from omnienv.protocol.codes import error_data, register_code

__all__ = [
    "OriginGuard",
    "OriginRefusedError",
    "UnsupportedMediaTypeError",
    "check_allowed",
    "is_loopback",
    "parse_host",
    "refuse",
]

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SIMPLE_TYPES = frozenset({b"text/plain", b"application/x-www-form-urlencoded", b"multipart/form-data"})
"""The body types of a cross-site "simple" request (no CORS preflight)."""
WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})
_CACHE_LIMIT = 1024


class OriginRefusedError(UsageError):
    """The request came with a ``Host`` or ``Origin`` this server does not answer (HTTP 403)."""

    code = "ORIGIN_REFUSED"


class UnsupportedMediaTypeError(ProtocolError):
    """A state-changing request whose body is not JSON (HTTP 415)."""

    code = "UNSUPPORTED_MEDIA_TYPE"


register_code(OriginRefusedError)
register_code(UnsupportedMediaTypeError)
STATUS: dict[type[OmniEnvError], int] = {OriginRefusedError: 403, UnsupportedMediaTypeError: 415}


def parse_host(value: str) -> tuple[str, int | None]:
    """``"Name:8000"`` -> ``("name", 8000)``; ``"[::1]"`` -> ``("::1", None)``; ValueError if malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            raise ValueError(f"unclosed '[' in host {value!r}")
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"junk after ']' in host {value!r}")
        port_text = rest[1:] if rest else ""
    elif value.count(":") > 1:  # a bare IPv6 address
        name, port_text = value, ""
    else:
        name, _, port_text = value.partition(":")
    name = name.rstrip(".")
    if not name or any(c in name for c in "/@?# \t"):
        raise ValueError(f"not a host name: {value!r}")
    if port_text and (not port_text.isdigit() or int(port_text) > 65535):
        raise ValueError(f"bad port in host {value!r}")
    return name, int(port_text) if port_text else None


def is_loopback(name: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1, IPv4-mapped 127.x)."""
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def _normal_origin(value: str) -> str:
    value = value.strip().lower().rstrip("/")
    if value in ("*", "null"):
        return value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
        raise ValueError(f"not an origin: {value!r} (write it as scheme://host[:port], e.g. http://example.com:8080)")
    return value


def _is_json(media: bytes) -> bool:
    return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))


def _hint(host: str) -> str:
    try:
        name = parse_host(host)[0]
    except ValueError:
        return "NAME"
    return f"[{name}]" if ":" in name else name


def check_allowed(hosts: Iterable[str], origins: Iterable[str]) -> None:
    """:class:`~omnienv.core.InvalidValueError` (a ValueError) naming the bad entry of
    ``allow_hosts`` or ``allow_origins``."""
    for what, entries in (("allow_hosts (--allow-host)", hosts), ("allow_origins (--allow-origin)", origins)):
        for entry in entries:
            if not isinstance(entry, str):
                raise InvalidValueError(f"{what}: each entry must be a str, got {type(entry).__name__} {entry!r}")
    for host in hosts:
        if host.strip() != "*":
            try:
                parse_host(host)
            except ValueError as exc:
                raise InvalidValueError(f"allow_hosts (--allow-host): {exc}; write NAME or NAME:PORT, or '*'") from None
    for origin in origins:
        try:
            _normal_origin(origin)
        except ValueError as exc:
            raise InvalidValueError(f"allow_origins (--allow-origin): {exc}") from None


class OriginGuard:
    """The rules above, as ASGI middleware (``OriginGuard(app, ...)``) or a check (:meth:`refusal`).

    ``OmniApp`` calls :meth:`refusal` itself, so an idle WebSocket keeps no extra frame.
    """

    def __init__(self, app: Any = None, *, allow_hosts: Iterable[str] = (), allow_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.any_host = False
        self.hosts: set[tuple[str, int | None]] = set()
        for host in allow_hosts:
            self.allow_host(host)
        origins = {_normal_origin(origin) for origin in allow_origins}
        self.any_origin = "*" in origins
        self.origins = frozenset(origins - {"*"})
        self._decided: dict[tuple[bytes | None, bytes | None], OmniEnvError | None] = {}

    def allow_host(self, host: str) -> None:
        """Answer requests for ``host`` (``name`` any port, ``name:port`` that one, ``*`` any)."""
        if host.strip() == "*":
            self.any_host = True
        else:
            self.hosts.add(parse_host(host))
        self._decided = {}

    def bind(self, host: str) -> None:
        """The server listens on ``host``: its name is a valid ``Host`` (a wildcard address is not)."""
        if host.strip().lower() not in WILDCARDS:
            self.allow_host(host)

    # -- the rules ------------------------------------------------------------------------------

    def host_ok(self, value: str) -> bool:
        if self.any_host:
            return True
        try:
            name, port = parse_host(value)
        except ValueError:
            return False
        return is_loopback(name) or (name, None) in self.hosts or (port is not None and (name, port) in self.hosts)

    def origin_ok(self, value: str) -> bool:
        if self.any_origin:
            return True
        try:
            origin = _normal_origin(value)
        except ValueError:
            return False
        if origin in self.origins:
            return True
        hostname = urlsplit(origin).hostname if origin != "null" else None
        return hostname is not None and is_loopback(hostname.rstrip("."))

    def _decide(self, host: bytes | None, origin: bytes | None) -> OmniEnvError | None:
        if host is not None and not self.host_ok(text := host.decode("latin-1")):
            text = text[:200]
            return OriginRefusedError(
                f"Host '{text}' refused: this server answers loopback names (localhost, 127.0.0.1, [::1]) and its "
                f"bound host only, so that a web page cannot reach it by DNS rebinding; start it with "
                f"--allow-host {_hint(text)} to serve that name"
            )
        if origin is not None and not self.origin_ok(text := origin.decode("latin-1")):
            text = text[:200]
            return OriginRefusedError(
                f"Origin '{text}' refused: a web page from another site may not drive this server; if that page "
                f"is yours, start the server with --allow-origin {text}"
            )
        return None

    def refusal(self, scope: dict[str, Any]) -> OmniEnvError | None:
        """Why this request is refused, or None. Reads the headers once."""
        host = origin = ctype = None
        body = False
        for key, value in scope.get("headers") or ():
            if key == b"host":
                host = value
            elif key == b"origin":
                origin = value
            elif key == b"content-type":
                ctype = value
            elif key == b"content-length":
                body = body or value.strip() != b"0"
            elif key == b"transfer-encoding":
                body = True
        if host is not None or origin is not None:
            decided = self._decided
            try:
                refused = decided[(host, origin)]
            except KeyError:
                refused = self._decide(host, origin)
                if len(decided) < _CACHE_LIMIT:
                    decided[(host, origin)] = refused
            if refused is not None:
                return refused
        if ctype is not None and scope["type"] == "http" and scope.get("method") in STATE_CHANGING:
            media = ctype.split(b";", 1)[0].strip().lower()
            # A page may send the CORS-safelisted types cross-site with no preflight: never accepted. Other
            # non-JSON types need a preflight (which gets no CORS grant here); they pass only with no body
            # (aiohttp, as openreward's client uses it, labels empty POSTs application/octet-stream).
            if media in SIMPLE_TYPES or (body and not _is_json(media)):
                return UnsupportedMediaTypeError(
                    f"{scope['method']} {scope.get('path', '')} with Content-Type '{ctype.decode('latin-1')[:100]}' "
                    "refused: send the body as JSON with 'Content-Type: application/json' (or send no body). "
                    "text/plain and form bodies are what a web page can post here cross-site without the browser "
                    "asking first"
                )
        return None

    # -- answering ------------------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and (refused := self.refusal(scope)) is not None:
            await refuse(scope, receive, send, refused)
            return
        await self.app(scope, receive, send)


async def refuse(scope: dict[str, Any], receive: Any, send: Any, exc: OmniEnvError) -> None:
    """Answer with the error: an HTTP response, or the WebSocket handshake denied with one."""
    body = encode({"type": "error", "data": error_data(exc)})
    status = STATUS.get(type(exc), 403)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    if (await receive())["type"] != "websocket.connect":
        return
    if "websocket.http.response" in (scope.get("extensions") or {}):
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:  # the server answers 403 without a body
        await send({"type": "websocket.close", "code": 1008})
