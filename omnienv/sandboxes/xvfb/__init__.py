"""Local desktops: one Xvfb display per session, and everything on it inside the session's sandbox.

The parts, one module each:

- :mod:`~omnienv.sandboxes.xvfb.server`: the X server (Xvfb on the host, fixed arguments, no TCP,
  no shared memory) and its watchdog;
- :mod:`~omnienv.sandboxes.xvfb.display`: :class:`XvfbDisplay`, the session: its one
  :class:`~omnienv.sandboxes.sandbox.Sandbox`, through which the window manager, every app and every
  shell start, with the display's socket bound in read-only;
- :mod:`~omnienv.sandboxes.xvfb.xclient`: input through XTEST and window facts through X-Resource,
  from the host's own X connection (no process per action, no command line);
- :mod:`~omnienv.sandboxes.xvfb.shell`: the agent's shell, spoken to over pipes;
- :mod:`~omnienv.sandboxes.xvfb.capture`: screenshots (``mss``, PNG at zlib level 1);
- :mod:`~omnienv.sandboxes.xvfb.pool`: :class:`DisplayPool`, warm displays.

:class:`XvfbDisplay` is a :class:`~omnienv.sandboxes.desktop.DesktopSession`.
"""

from omnienv.sandboxes.desktop import DisplayError
from omnienv.sandboxes.xvfb.display import PREFIX, DisplaySpec, XvfbDisplay
from omnienv.sandboxes.xvfb.launch import path_kind, require_sandbox
from omnienv.sandboxes.xvfb.pool import DisplayPool, shared_pool
from omnienv.sandboxes.xvfb.server import REQUIRED_PROGRAMS, XServer, missing_programs
from omnienv.sandboxes.xvfb.shell import OUTPUT_LIMIT, SandboxShell
from omnienv.sandboxes.xvfb.xclient import XClient, XConnectionLost

__all__ = [
    "OUTPUT_LIMIT",
    "PREFIX",
    "REQUIRED_PROGRAMS",
    "DisplayError",
    "DisplayPool",
    "DisplaySpec",
    "SandboxShell",
    "XClient",
    "XConnectionLost",
    "XServer",
    "XvfbDisplay",
    "missing_programs",
    "path_kind",
    "require_sandbox",
    "shared_pool",
]
