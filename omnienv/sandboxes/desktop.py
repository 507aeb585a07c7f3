"""What every desktop backend offers: input and inspection actions as xdotool command lines.

A backend provides one primitive, ``exec`` (run a program on the desktop), plus a shell, files
and screenshots; the actions (clicks, drags, keys, window queries) are written once here on top
of it. :mod:`omnienv.sandboxes.xvfb` runs them on a local Xvfb display and
:mod:`omnienv.sandboxes.e2b_desktop` on an E2B Desktop sandbox.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass

from omnienv.core.errors import EnvironmentFailure, ToolError

__all__ = ["CommandResult", "DesktopSession", "DisplayError", "key_combo", "modifiers"]

CLICK_SETTLE = 0.05
"""Seconds a click waits before returning: the window manager moves the keyboard focus
asynchronously, and keys typed right after a click would otherwise reach the old window."""
DRAG_STEPS = 8
KEY_ALIASES = {
    "enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape", "tab": "Tab",
    "backspace": "BackSpace", "delete": "Delete", "del": "Delete", "space": "space",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right", "home": "Home", "end": "End",
    "pageup": "Prior", "page_up": "Prior", "pagedown": "Next", "page_down": "Next",
    "insert": "Insert", "ctrl": "ctrl", "control": "ctrl", "shift": "shift", "alt": "alt",
    "option": "alt", "cmd": "super", "command": "super", "win": "super", "meta": "super",
    "super": "super",
}
_UNKNOWN_KEY = re.compile(r"No such key name '([^']*)'")
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
BUTTONS = {"left": 1, "middle": 2, "right": 3}


class DisplayError(EnvironmentFailure):
    """The display could not start or died: infrastructure, so the episode is void, not scored."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False


def key_combo(keys: str) -> list[str]:
    """``"ctrl+s"`` or ``"Enter Tab"`` as xdotool key names; aliases (``cmd``, ``esc``) mapped."""
    combos = keys.split()
    if not combos:
        raise ToolError("no key given: pass an xdotool key name such as 'Return' or a combo like 'ctrl+s'")
    return ["+".join(KEY_ALIASES.get(part.lower(), part) for part in combo.split("+")) for combo in combos]


def modifiers(text: str | None) -> list[str]:
    """Modifier keys to hold around a click, from ``"shift"`` or ``"ctrl+shift"``."""
    if not text:
        return []
    return [KEY_ALIASES.get(part.strip().lower(), part.strip()) for part in text.split("+") if part.strip()]


class DesktopSession:
    """The input and inspection actions of one desktop, written once as xdotool command lines.

    Subclasses provide ``exec`` (run a program on the desktop), ``shell``, ``screenshot``,
    ``read_file``, ``alive`` and ``close``.
    """

    width: int
    height: int

    async def exec(self, argv: Sequence[str], timeout: float = 10.0) -> CommandResult:
        raise NotImplementedError

    async def shell(self, command: str, timeout: float = 60.0) -> CommandResult:
        raise NotImplementedError

    async def screenshot(self) -> bytes:
        """The whole screen as PNG bytes."""
        raise NotImplementedError

    async def read_file(self, path: str) -> bytes | None:
        """A file of the session's home directory (relative path), or None if there is none."""
        raise NotImplementedError

    async def write_file(self, path: str, data: bytes) -> None:
        raise NotImplementedError

    async def is_dir(self, path: str) -> bool:
        """Whether ``path`` (relative to the home directory) is a directory."""
        return (await self.shell(f"test -d {shlex.quote(path)}", timeout=10)).returncode == 0

    async def launch(self, command: str) -> None:
        """Start a program in the background (an app the task needs)."""
        raise NotImplementedError

    def alive(self) -> bool:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    # -- xdotool -----------------------------------------------------------------------------

    async def xdotool(self, *args: str | int | float, timeout: float = 30.0) -> str:
        """Run one xdotool command chain; a failure is the agent's (bad key) unless the display died."""
        result = await self.exec(["xdotool", *map(str, args)], timeout=timeout)
        if result.returncode != 0 or result.timed_out:
            self.require_alive()
            problem = result.stderr.strip() or f"exit code {result.returncode}"
            raise ToolError(f"the desktop refused the action: {problem}")
        unknown = _UNKNOWN_KEY.search(result.stderr)
        if unknown:  # xdotool skips unknown keys and still exits 0
            raise ToolError(f"unknown key name '{unknown.group(1)}': use xdotool key names such as "
                            "'Return', 'Tab', 'Escape', 'BackSpace', 'a', 'F5', or combos like 'ctrl+s'")
        return result.stdout

    def require_alive(self) -> None:
        if not self.alive():
            raise DisplayError("the desktop display died")

    def _hold(self, mods: list[str]) -> tuple[list[str], list[str]]:
        down = ["keydown", "+".join(mods)] if mods else []
        up = ["keyup", "+".join(mods)] if mods else []
        return down, up

    async def click(self, x: int, y: int, button: str = "left", repeat: int = 1,
                    held: str | None = None) -> None:
        down, up = self._hold(modifiers(held))
        await self.xdotool("mousemove", x, y, *down, "click", "--repeat", repeat, "--delay", 60,
                           BUTTONS[button], *up, "sleep", CLICK_SETTLE)

    async def move(self, x: int, y: int) -> None:
        await self.xdotool("mousemove", x, y)

    async def mouse_button(self, pressed: bool, at: tuple[int, int] | None = None) -> None:
        move = ["mousemove", at[0], at[1]] if at else []
        await self.xdotool(*move, "mousedown" if pressed else "mouseup", 1)

    async def drag(self, start: tuple[int, int], end: tuple[int, int], held: str | None = None) -> None:
        """Press, move in steps, release: window managers and apps start a drag on motion events
        past a threshold, and a single jump under load can reach them after the release."""
        down, up = self._hold(modifiers(held))
        path: list[str | int | float] = []
        for step in range(1, DRAG_STEPS + 1):
            x = start[0] + (end[0] - start[0]) * step // DRAG_STEPS
            y = start[1] + (end[1] - start[1]) * step // DRAG_STEPS
            path += ["mousemove", x, y, "sleep", 0.02]
        await self.xdotool("mousemove", *start, *down, "mousedown", 1, "sleep", 0.05, *path,
                           "sleep", 0.05, "mouseup", 1, *up, "sleep", CLICK_SETTLE)

    async def scroll(self, x: int, y: int, direction: str, amount: int, held: str | None = None) -> None:
        down, up = self._hold(modifiers(held))
        await self.xdotool("mousemove", x, y, *down, "click", "--repeat", amount, "--delay", 20,
                           SCROLL_BUTTONS[direction], *up)

    async def type_text(self, text: str) -> None:
        if text:
            await self.xdotool("type", "--delay", 4, "--", text, timeout=60 + len(text) * 0.02)

    async def key(self, keys: str) -> None:
        await self.xdotool("key", "--delay", 20, "--", *key_combo(keys))

    async def hold_key(self, keys: str, seconds: float) -> None:
        names = key_combo(keys)
        await self.xdotool("keydown", "--", *names, "sleep", seconds, "keyup", "--", *names,
                           timeout=seconds + 30)

    async def cursor(self) -> tuple[int, int]:
        out = await self.xdotool("getmouselocation", "--shell")
        values = dict(line.split("=", 1) for line in out.split() if "=" in line)
        return int(values["X"]), int(values["Y"])

    async def window_titles(self) -> list[str]:
        """Titles of the visible top-level windows."""
        result = await self.exec(["xdotool", "search", "--onlyvisible", "--name", ".", "getwindowname", "%@"])
        if result.returncode != 0:
            self.require_alive()
            return []  # xdotool exits 1 when nothing matches
        return [line for line in result.stdout.splitlines() if line]

    async def window_geometry(self, name: str) -> tuple[int, int, int, int] | None:
        """(x, y, width, height) of the first visible window whose title matches ``name``."""
        result = await self.exec(["xdotool", "search", "--onlyvisible", "--name", name,
                                  "getwindowgeometry", "--shell"])
        if result.returncode != 0:
            self.require_alive()
            return None
        values = dict(line.split("=", 1) for line in result.stdout.split() if "=" in line)
        return int(values["X"]), int(values["Y"]), int(values["WIDTH"]), int(values["HEIGHT"])

    async def wait_for_window(self, name: str, timeout: float = 20.0) -> None:
        """Poll until a window titled like ``name`` is visible (``xdotool --sync`` sleeps 0.5 s)."""
        deadline = time.monotonic() + timeout
        while True:
            result = await self.exec(["xdotool", "search", "--onlyvisible", "--limit", "1", "--name", name])
            if result.returncode == 0 and result.stdout.strip():
                return
            self.require_alive()
            if time.monotonic() > deadline:
                raise DisplayError(f"no window titled like {name!r} appeared within {timeout:g} s"
                                   f"{self.diagnosis()}")
            await asyncio.sleep(0.02)

    def diagnosis(self) -> str:
        """What the apps said, for an error message (backends without logs say nothing)."""
        return ""
