"""What every desktop backend offers, and the one parser of the agent's key names.

A backend (:mod:`omnienv.sandboxes.xvfb` for local displays, :mod:`omnienv.sandboxes.e2b_desktop`
for E2B) implements :class:`DesktopSession`: input actions, screenshots, a shell, files, the apps
the environment launched, and the facts checkers rely on (which process owns which window, the
selection's owner and text), read from the X server, never from titles the agent can set.

Key names are validated here, once, against the real X keysym table: an agent's ``keys`` text
becomes a list of :class:`Combo` of known keysyms and modifiers from a fixed set, or a
:class:`~omnienv.core.errors.ToolError` naming valid examples. Nothing the agent writes ever
reaches a command line as free text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from omnienv.core.errors import EnvironmentFailure, ToolError

__all__ = [
    "App",
    "Combo",
    "CommandResult",
    "DesktopSession",
    "DisplayError",
    "Window",
    "char_keysym",
    "key_combo",
    "keysym_name",
    "modifiers",
    "parse_keys",
]

MODIFIERS = {"shift": "Shift_L", "ctrl": "Control_L", "alt": "Alt_L", "super": "Super_L"}
"""The modifiers an agent may hold, as the keysym each one presses."""
MODIFIER_ALIASES = {
    "shift": "shift",
    "ctrl": "ctrl",
    "control": "ctrl",
    "alt": "alt",
    "option": "alt",
    "super": "super",
    "cmd": "super",
    "command": "super",
    "win": "super",
    "meta": "super",
}
KEY_ALIASES = {
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "backspace": "BackSpace",
    "delete": "Delete",
    "del": "Delete",
    "space": "space",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "page_up": "Prior",
    "pagedown": "Next",
    "page_down": "Next",
    "insert": "Insert",
}
MAX_KEYS_TEXT = 256
MAX_COMBOS = 32
KEY_HELP = (
    "use X key names such as 'Return', 'Tab', 'Escape', 'BackSpace', 'a', 'F5', 'Page_Down', or combos "
    f"like 'ctrl+s' and 'ctrl+shift+t' (modifiers: {', '.join(MODIFIERS)}); separate several with spaces"
)
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
BUTTONS = {"left": 1, "middle": 2, "right": 3}
CLICK_SETTLE = 0.05
"""Seconds between a click and the next key: the window manager moves the keyboard focus
asynchronously, and keys sent right after a click would otherwise reach the old window."""
DRAG_STEPS = 8


class DisplayError(EnvironmentFailure):
    """The display could not start or died: infrastructure, so the episode is void, not scored."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False


@dataclass(frozen=True, slots=True)
class Combo:
    """One key press: modifier keysym names held around one key (a keysym name and its code)."""

    modifiers: tuple[str, ...]
    key: str
    keysym: int

    def xdotool(self) -> str:
        """The combo in xdotool's syntax (only known names, joined by '+')."""
        held = [word for word, name in MODIFIERS.items() if name in self.modifiers]
        return "+".join([*held, self.key])


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


# -- key names --------------------------------------------------------------------------------


@functools.cache
def _keysyms() -> dict[str, int]:
    """Every keysym name X knows, from python-xlib's tables (``XF86_Sleep`` spelled ``XF86Sleep``)."""
    import importlib
    import pkgutil

    import Xlib.keysymdef

    table: dict[str, int] = {}
    for module in pkgutil.iter_modules(Xlib.keysymdef.__path__):
        group = importlib.import_module(f"Xlib.keysymdef.{module.name}")
        for attribute, value in vars(group).items():
            if attribute.startswith("XK_") and isinstance(value, int) and value:
                name = attribute[3:]
                table[name.replace("XF86_", "XF86", 1) if module.name == "xf86" else name] = value
    return table


@functools.cache
def _folded() -> dict[str, str]:
    """Lower-cased name -> the one name it folds from (names that fold together are left out)."""
    folded: dict[str, str | None] = {}
    for name in _keysyms():
        folded[name.lower()] = None if name.lower() in folded else name
    return {low: name for low, name in folded.items() if name is not None}


@functools.cache
def _names_by_code() -> dict[int, str]:
    names: dict[int, str] = {}
    for name, code in sorted(_keysyms().items()):
        names.setdefault(code, name)
    return names


def char_keysym(char: str) -> int:
    """The keysym that types ``char`` (Latin-1 is its own code; the rest is Unicode's)."""
    code = ord(char)
    if char in "\n\r":
        return _keysyms()["Return"]
    if char == "\t":
        return _keysyms()["Tab"]
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    if code < 0x20 or 0x7F <= code < 0xA0:
        raise ToolError(f"cannot type the control character U+{code:04X}; use the key tool (e.g. 'Escape')")
    return 0x01000000 | code


def keysym_name(keysym: int) -> str:
    """A name ``XStringToKeysym`` accepts for ``keysym`` (``U20AC`` for Unicode ones)."""
    name = _names_by_code().get(keysym)
    if name is not None:
        return name
    if keysym & 0xFF000000 == 0x01000000:
        return f"U{keysym & 0xFFFFFF:04X}"
    raise ToolError(f"no key name for keysym 0x{keysym:x}")


_UNICODE_NAME = re.compile(r"U([0-9A-Fa-f]{4,6})")


def _resolve(name: str) -> tuple[str, int]:
    """(canonical name, keysym) of one key name; a ToolError naming it otherwise."""
    table = _keysyms()
    canonical = KEY_ALIASES.get(name.lower(), name)
    if canonical in table:
        return canonical, table[canonical]
    if len(name) == 1 and name.isprintable():
        keysym = char_keysym(name)
        return keysym_name(keysym), keysym
    unicode = _UNICODE_NAME.fullmatch(name)
    if unicode and 0x20 <= int(unicode.group(1), 16) <= 0x10FFFF:
        return f"U{int(unicode.group(1), 16):04X}", 0x01000000 | int(unicode.group(1), 16)
    folded = _folded().get(name.lower())
    if folded is not None:
        return folded, table[folded]
    raise ToolError(f"unknown key name {_shown(name)}: {KEY_HELP}")


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "...")


def parse_keys(keys: str) -> list[Combo]:
    """``"ctrl+s"`` or ``"Return Tab"`` as validated combos; every name is checked before any is used."""
    if len(keys) > MAX_KEYS_TEXT:
        raise ToolError(f"keys is too long ({len(keys)} characters, at most {MAX_KEYS_TEXT}): {KEY_HELP}")
    words = keys.split()
    if not words:
        raise ToolError(f"no key given: {KEY_HELP}")
    if len(words) > MAX_COMBOS:
        raise ToolError(f"at most {MAX_COMBOS} keys or combos per call, got {len(words)}")
    combos = []
    for word in words:
        parts = ["+"] if word == "+" else word.split("+")
        if "" in parts:
            raise ToolError(f"{_shown(word)} has an empty part: {KEY_HELP}")
        *held, last = parts
        mods = tuple(MODIFIERS[_modifier(part)] for part in held)
        if last.lower() in MODIFIER_ALIASES:  # a modifier alone ("shift") is pressed as a key
            name = MODIFIERS[MODIFIER_ALIASES[last.lower()]]
            combos.append(Combo(mods, name, _keysyms()[name]))
        else:
            combos.append(Combo(mods, *_resolve(last)))
    return combos


def _modifier(word: str) -> str:
    found = MODIFIER_ALIASES.get(word.strip().lower())
    if found is None:
        raise ToolError(
            f"unknown modifier {_shown(word)}: modifiers are {', '.join(MODIFIERS)} (or control, "
            f"cmd, win, meta, option), joined by '+', e.g. 'ctrl+shift'; {KEY_HELP}"
        )
    return found


def modifiers(text: str | None) -> list[str]:
    """The modifiers held around a click, from ``"shift"`` or ``"ctrl+shift"``, as canonical words."""
    if not text or not text.strip():
        return []
    if len(text) > MAX_KEYS_TEXT:
        raise ToolError(f"modifier text is too long ({len(text)} characters)")
    words = [part for part in re.split(r"[+\s]+", text) if part]
    return list(dict.fromkeys(_modifier(word) for word in words))


def key_combo(keys: str) -> list[str]:
    """``keys`` as validated xdotool key combos (``"Enter esc cmd+Tab"`` -> Return, Escape, super+Tab)."""
    return [combo.xdotool() for combo in parse_keys(keys)]


# -- the session --------------------------------------------------------------------------------


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

    async def launch(self, command: str, name: str | None = None) -> App:
        """Start an app the task needs (a trusted command line from the task table)."""
        raise NotImplementedError

    async def read_file(self, path: str) -> bytes | None:
        """A regular file of the home directory, or None (missing, a symlink, a directory...)."""
        raise NotImplementedError

    async def write_file(self, path: str, data: bytes) -> None:
        raise NotImplementedError

    async def path_kind(self, path: str) -> str | None:
        """ "file", "dir", "symlink" or "other" for an entry of the home directory, None if absent."""
        raise NotImplementedError

    async def is_dir(self, path: str) -> bool:
        return await self.path_kind(path) == "dir"

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
        import asyncio
        import time

        deadline = time.monotonic() + timeout
        while not await self.app_windows(name):
            self.require_alive()
            if not await self.app_alive(name):
                raise DisplayError(f"the app {name!r} exited before showing a window{self.diagnosis()}")
            if time.monotonic() > deadline:
                raise DisplayError(f"the app {name!r} showed no window within {timeout:g} s{self.diagnosis()}")
            await asyncio.sleep(0.01)


def drag_path(start: tuple[int, int], end: tuple[int, int]) -> Sequence[tuple[int, int]]:
    """The points a drag moves through: window managers start a drag on motion past a threshold."""
    return [
        (start[0] + (end[0] - start[0]) * step // DRAG_STEPS, start[1] + (end[1] - start[1]) * step // DRAG_STEPS)
        for step in range(1, DRAG_STEPS + 1)
    ]
