"""``/ui`` on an environment server: the play page and the trajectory viewer, as static files.

The pages talk to the server's own HTTP session routes (``/sessions``, ``/splits``,
``/schema``), so nothing here knows about environments and nothing runs per request beyond
serving a file.
"""

from __future__ import annotations

from pathlib import Path

from starlette.responses import RedirectResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

__all__ = ["STATIC_DIR", "ui_routes"]

STATIC_DIR = Path(__file__).parent / "static"


def ui_routes(prefix: str = "/ui") -> list[BaseRoute]:
    """``GET /ui/`` is the play page, ``/ui/view.html`` the viewer (it opens local files here)."""

    async def to_index(request: object) -> RedirectResponse:
        return RedirectResponse(f"{prefix}/", status_code=307)

    return [
        Route(prefix, to_index, methods=["GET"]),
        Mount(prefix, app=StaticFiles(directory=STATIC_DIR, html=True), name="ui"),
    ]
