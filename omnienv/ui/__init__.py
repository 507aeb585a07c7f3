"""Web pages for people: play an environment in a browser, read trajectory files and training logs.

Everything is static files (plain ES modules and CSS, no build step, nothing fetched from a
CDN) served by Starlette's ``StaticFiles``, so a server with the pages on starts as fast as one
without. ``ui_routes`` adds ``/ui`` to an environment server; ``create_viewer_app`` serves a
trajectory file for ``omnienv view``.
"""

from omnienv.ui.routes import STATIC_DIR, ui_routes

__all__ = ["STATIC_DIR", "create_viewer_app", "ui_routes"]


def __getattr__(name: str) -> object:
    # The viewer is only needed by ``omnienv view``; servers should not pay for importing it.
    if name == "create_viewer_app":
        from omnienv.ui.viewer import create_viewer_app

        return create_viewer_app
    raise AttributeError(name)
