"""What every desktop backend offers: input, screenshots, a shell, files, apps and the facts checks read.

A backend (:mod:`omnienv.sandboxes.xvfb` for local displays, :mod:`omnienv.sandboxes.e2b_desktop`
for E2B) implements :class:`DesktopSession`: input actions, screenshots, a shell, files, the apps
the environment launched, and the facts checkers rely on (which process owns which window, the
selection's owner and text), read from the X server, never from titles the agent can set.

An app may be launched with a **home of its own** (``own_home=True``): a home directory that only
that app's sandbox mounts, so a file there was written by the app (driven through its windows),
never by the agent's shell or terminal, which see the session's home. Checks of an app's
documents read that home (``read_file(path, app=name)``).

Key names are validated in :mod:`omnienv.sandboxes.desktop_keys` (re-exported here).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from omnienv.core.errors import EnvironmentFailure
from omnienv.sandboxes.desktop_keys import (
    KEY_HELP,
    MODIFIERS,
    Combo,
    char_keysym,
    key_combo,
    keysym_name,
    modifiers,
    named_keysym,
    parse_keys,
)

__all__ = [
    "KEY_HELP",
    "MODIFIERS",
    "App",
    "Combo",
    "CommandResult",
    "DesktopSession",
    "DisplayError",
    "Window",
    "char_keysym",
    "drag_path",
    "key_combo",
    "keysym_name",
    "modifiers",
    "named_keysym",
    "parse_keys",
]

SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
BUTTONS = {"left": 1, "middle": 2, "right": 3}
CLICK_SETTLE = 0.05
"""Seconds between a click and the next key: the window manager moves the keyboard focus
asynchronously, and keys sent right after a click would otherwise reach the old window."""
DRAG_STEPS = 8
PLACE_TIMEOUT = 5.0


class DisplayError(EnvironmentFailure):
    """The display could not start or died: infrastructure, so the episode is void, not scored."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False


@dataclass(frozen=True, slots=True)
class Window:
    """A top-level client window as the X server reports it."""

    id: int
    title: str
    app_class: str
    x: int
    y: int
    width: int
    height: int
    viewable: bool
    pid: int | None
    """The host pid of the X client that created the window (X-Resource), None if unknown."""
    exe: str | None = None


@dataclass(slots=True)
class App:
    """An app the environment launched: ``pid`` is its program's host pid (not a wrapper's)."""

    name: str
    command: str
    pid: int | None
    handle: object = None
    own_home: bool = False


class DesktopSession:
    """One desktop: input, screenshots, a shell, files, launched apps and the facts checks read.

    Paths are relative to the session's home directory and never followed through a symlink.
    """

    width: int
    height: int
    apps: dict[str, App]

    # lifecycle
    def alive(self) -> bool:
        raise NotImplementedError

    def require_alive(self) -> None:
        if not self.alive():
            raise DisplayError("the desktop display died")

    async def close(self) -> None:
        raise NotImplementedError

    def diagnosis(self) -> str:
        """What the apps said, for an error message (backends without logs say nothing)."""
        return ""

    def begin_step(self) -> None:
        """A step of the episode begins: a backend that bounds how long a step may wait on its display
        starts the step's budget afresh."""

    # input
    async def click(self, x: int, y: int, button: str = "left", repeat: int = 1, held: str | None = None) -> None:
        raise NotImplementedError

    async def move(self, x: int, y: int) -> None:
        raise NotImplementedError

    async def mouse_button(self, pressed: bool, at: tuple[int, int] | None = None) -> None:
        raise NotImplementedError

    async def drag(self, start: tuple[int, int], end: tuple[int, int], held: str | None = None) -> None:
        raise NotImplementedError

    async def scroll(self, x: int, y: int, direction: str, amount: int, held: str | None = None) -> None:
        raise NotImplementedError

    async def type_text(self, text: str) -> None:
        raise NotImplementedError

    async def key(self, keys: str) -> None:
        raise NotImplementedError

    async def hold_key(self, keys: str, seconds: float) -> None:
        raise NotImplementedError

    async def cursor(self) -> tuple[int, int]:
        raise NotImplementedError

    async def screenshot(self) -> bytes:
        """The whole screen as PNG bytes."""
        raise NotImplementedError

    # programs and files
    async def shell(self, command: str, timeout: float = 60.0) -> CommandResult:
        raise NotImplementedError

    async def launch(self, command: str, name: str | None = None, *, own_home: bool = False) -> App:
        """Start an app the task needs (a trusted command line from the task table).

        With ``own_home`` the app's home is its own (see the module docs): write its files first
        with ``write_file(path, data, app=name)``.
        """
        raise NotImplementedError

    async def place(self, name: str, x: int, y: int, width: int, height: int) -> None:
        """Ask the window manager to put the app's window's frame at (x, y), its client area at
        width x height, and wait until it did (for apps that take no ``-geometry``)."""
        raise NotImplementedError

    async def read_file(self, path: str, app: str | None = None) -> bytes | None:
        """A regular file of the home directory (``app``'s own one if named), or None (missing, a
        symlink, a directory...)."""
        raise NotImplementedError

    async def write_file(self, path: str, data: bytes, app: str | None = None) -> None:
        """Write a file (parents made) in the home directory, or in ``app``'s own one if named."""
        raise NotImplementedError

    async def path_kind(self, path: str, app: str | None = None) -> str | None:
        """ "file", "dir", "symlink" or "other" for an entry of the home directory (``app``'s own
        one if named), None if absent."""
        raise NotImplementedError

    async def is_dir(self, path: str, app: str | None = None) -> bool:
        return await self.path_kind(path, app) == "dir"

    # facts for checkers
    async def windows(self) -> list[Window]:
        """Every top-level client window, with the host pid of the client that owns it."""
        raise NotImplementedError

    async def window_titles(self) -> list[str]:
        """Titles of the visible top-level windows (for people and prompts, never for checks)."""
        return [window.title for window in await self.windows() if window.viewable and window.title]

    async def app_alive(self, name: str) -> bool:
        """Whether the app the environment launched as ``name`` is still running."""
        raise NotImplementedError

    async def app_windows(self, name: str) -> list[Window]:
        """The visible windows owned by the program the environment launched as ``name``."""
        app = self.apps.get(name)
        if app is None or app.pid is None:
            return []
        return [window for window in await self.windows() if window.viewable and window.pid == app.pid]

    async def in_session(self, pid: int) -> bool:
        """Whether ``pid`` is one of this session's processes (the X server is not)."""
        raise NotImplementedError

    async def selection(self, owner: str | None = None) -> tuple[int | None, str] | None:
        """(host pid of the PRIMARY selection's owner, its text), or None when nothing is selected.

        With ``owner`` (an app name), the text is asked for only when that app owns the selection.
        """
        return None

    async def wait_for_app(self, name: str, timeout: float = 20.0) -> None:
        """Poll until the app launched as ``name`` shows a window."""
        deadline = time.monotonic() + timeout
        while not await self.app_windows(name):
            self.require_alive()
            if not await self.app_alive(name):
                raise DisplayError(f"the app {name!r} exited before showing a window{self.diagnosis()}")
            if time.monotonic() > deadline:
                raise DisplayError(f"the app {name!r} showed no window within {timeout:g} s{self.diagnosis()}")
            await asyncio.sleep(0.01)

    async def wait_settled(self, name: str, timeout: float = 10.0) -> None:
        """Wait until the app launched as ``name`` has finished starting (a window shows before it is
        drawn); backends that cannot tell return at once."""

    async def wait_placed(self, name: str, x: int, y: int, width: int, timeout: float = PLACE_TIMEOUT) -> None:
        """Poll until the app's window sits at (x, y) (its frame's corner: the client area is at most a
        border and a title bar further) and is ``width`` wide."""
        deadline = time.monotonic() + timeout
        while True:
            for window in await self.app_windows(name):
                if 0 <= window.x - x <= 8 and 0 <= window.y - y <= 40 and window.width == width:
                    return
            self.require_alive()
            if time.monotonic() > deadline:
                raise DisplayError(f"the window manager did not place the app {name!r} within {timeout:g} s")
            await asyncio.sleep(0.01)


def drag_path(start: tuple[int, int], end: tuple[int, int]) -> Sequence[tuple[int, int]]:
    """The points a drag moves through: window managers start a drag on motion past a threshold."""
    return [
        (start[0] + (end[0] - start[0]) * step // DRAG_STEPS, start[1] + (end[1] - start[1]) * step // DRAG_STEPS)
        for step in range(1, DRAG_STEPS + 1)
    ]
