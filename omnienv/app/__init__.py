"""The whole server: the session layer with the routers the dialects provide, in one call.

This package sits above :mod:`omnienv.server` and :mod:`omnienv.dialects`, so imports flow one
way: the server knows nothing of ORS or NeMo Gym, and the dialects plug their routes in here.
"""

from omnienv.app.create import create_app, default_plugins

__all__ = ["create_app", "default_plugins"]
