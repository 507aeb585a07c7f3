"""Local desktops: one Xvfb display per session, and everything on it inside the session's sandbox.

The parts, one module each:

- :mod:`~omnienv.sandboxes.xvfb.server`: the X server (Xvfb in a sandbox of its own, as a host
  user of its own from :mod:`~omnienv.sandboxes.xvfb.users`; fixed arguments, no TCP, no shared
  memory) and its watchdog;
- :mod:`~omnienv.sandboxes.xvfb.display`: :class:`XvfbDisplay`, the session: its one
  :class:`~omnienv.sandboxes.sandbox.Sandbox`, through which the window manager, every app and every
  shell start, with the display's socket bound in read-only;
- :mod:`~omnienv.sandboxes.xvfb.xclient`: the host's own X connection (no process per action, no
  command line), with :mod:`~omnienv.sandboxes.xvfb.keyboard` (keys through XTEST),
  :mod:`~omnienv.sandboxes.xvfb.windows` (window and selection facts through X-Resource) and
  :mod:`~omnienv.sandboxes.xvfb.input` (the agent's actions as XTEST events);
- :mod:`~omnienv.sandboxes.xvfb.homes`: the session's home and the homes of their own that some
  apps get, read and written by the host without following symlinks;
- :mod:`~omnienv.sandboxes.xvfb.shell`: the agent's shell, spoken to over pipes;
- :mod:`~omnienv.sandboxes.xvfb.capture`: screenshots (``mss``; PNG with Pillow and ISA-L);
- :mod:`~omnienv.sandboxes.xvfb.pool`: :class:`DisplayPool`, warm displays.

:class:`XvfbDisplay` is a :class:`~omnienv.sandboxes.desktop.DesktopSession`.
"""

from omnienv.sandboxes.desktop import DisplayError
from omnienv.sandboxes.xvfb.display import PREFIX, DisplaySpec, XvfbDisplay
from omnienv.sandboxes.xvfb.homes import path_kind
from omnienv.sandboxes.xvfb.launch import require_sandbox
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
