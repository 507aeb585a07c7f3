"""``/ui`` on an environment server: the play page and the trajectory viewer, as static files.

The pages talk to the server's own HTTP session routes (``/sessions``, ``/splits``,
``/schema``), so nothing here knows about environments and nothing runs per request beyond
serving a file. They are served with the same security headers as ``omnienv view``: the viewer
opens hostile trajectory files from disk here too, and the play page shows whatever an
environment returns.
"""

from __future__ import annotations

from pathlib import Path

from starlette.responses import RedirectResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "STATIC_DIR", "SecurityHeaders", "ui_routes"]

STATIC_DIR = Path(__file__).parent / "static"

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
"""Scripts only from the pages' own files: a string from a file or an environment that became
markup still could not run. Requests only to the serving origin (the session routes, the viewer's
API), so an image URL in a trajectory cannot tell a third party who opened it. Inline styles stay
allowed (the pages colour tokens with them); images may be data URLs (screenshots are base64).
No page may frame these (clickjacking the play page's buttons)."""

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),  # frame-ancestors for browsers that predate it
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


class SecurityHeaders:
    """ASGI wrapper that puts ``SECURITY_HEADERS`` on every HTTP response of ``app``, replacing any
    the app set itself, so a response wrapped twice carries each header once."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                ours = {name for name, _ in SECURITY_HEADERS}
                headers = [(k, v) for k, v in message.get("headers") or [] if k.lower() not in ours]
                message = {**message, "headers": [*headers, *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def ui_routes(prefix: str = "/ui") -> list[BaseRoute]:
    """``GET /ui/`` is the play page, ``/ui/view.html`` the viewer (it opens local files here)."""

    async def to_index(request: object) -> RedirectResponse:
        return RedirectResponse(f"{prefix}/", status_code=307)

    pages = SecurityHeaders(StaticFiles(directory=STATIC_DIR, html=True))
    return [Route(prefix, to_index, methods=["GET"]), Mount(prefix, app=pages, name="ui")]
