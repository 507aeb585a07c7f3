"""The agent's key names, validated once against the real X keysym table.

An agent's ``keys`` text becomes a list of :class:`Combo` of known keysyms and modifiers from a
fixed set, or a :class:`~omnienv.core.errors.ToolError` naming valid examples. Nothing the agent
writes ever reaches a command line as free text: backends press keysyms (XTEST) or, where they
must speak xdotool, join only known names with '+'.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from omnienv.core.errors import ToolError

__all__ = [
    "KEY_HELP",
    "MODIFIERS",
    "Combo",
    "char_keysym",
    "key_combo",
    "keysym_name",
    "modifiers",
    "named_keysym",
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


def named_keysym(name: str) -> int:
    """The keysym of a canonical name (one :func:`parse_keys` returned, or a :data:`MODIFIERS` value)."""
    return _keysyms()[name]
