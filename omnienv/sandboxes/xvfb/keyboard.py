"""Keys over XTEST: validated keysyms pressed through whatever keycode produces them.

A character missing from the keymap is typed through a scratch keycode that is mapped once and
kept (remapping a keycode while an app still reads earlier presses of it would garble them); the
least recently used one is remapped when none is free. Every function takes the live
python-xlib display and runs under :class:`~omnienv.sandboxes.xvfb.xclient.XClient`'s lock.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from omnienv.core.errors import ToolError
from omnienv.sandboxes.desktop_keys import MODIFIERS, Combo, char_keysym, named_keysym

__all__ = ["Keyboard"]

Keymap = dict[int, tuple[int, bool]]
"""keysym -> (keycode, needs shift)."""
SHIFT = MODIFIERS["shift"]


class Keyboard:
    """The scratch keycodes of one X connection (forgotten when it is remade)."""

    def __init__(self) -> None:
        self._scratch: OrderedDict[int, int] = OrderedDict()  # keycode -> keysym we mapped there

    def reset(self) -> None:
        self._scratch.clear()

    def _keymap(self, d: Any) -> tuple[Keymap, list[int]]:
        """keysym -> (keycode, needs shift) from the server's current map, and the empty keycodes."""
        first, last = d.display.info.min_keycode, d.display.info.max_keycode
        found: Keymap = {}
        empty = []
        for offset, syms in enumerate(d.get_keyboard_mapping(first, last - first + 1)):
            code = first + offset
            if not any(syms):
                empty.append(code)
            for level, keysym in enumerate(syms[:2]):
                if keysym and (keysym not in found or (not level and found[keysym][1])):
                    found[keysym] = (code, bool(level))
        return found, empty

    def _code(self, d: Any, keysym: int, keymap: Keymap, empty: list[int], used: set[int]) -> tuple[int, bool]:
        """The keycode that produces ``keysym``, mapping a scratch keycode when none does."""
        if keysym in keymap:
            return keymap[keysym]
        free = [code for code in empty if code not in self._scratch]
        if free:
            code = free[-1]
        elif self._scratch:
            code = next(iter(self._scratch))  # the least recently used scratch keycode
            if code in used:  # an earlier key of this very text still needs the old mapping
                d.sync()
                time.sleep(0.05)
                used.clear()
        else:
            raise ToolError("the keyboard map has no free keycode left for this character (a program remapped them)")
        self._scratch.pop(code, None)
        self._scratch[code] = keysym
        d.change_keyboard_mapping(code, [(keysym, keysym)])
        d.sync()
        for stale in [k for k, (c, _) in keymap.items() if c == code]:
            del keymap[stale]
        keymap[keysym] = (code, False)
        return code, False

    def _shift(self, d: Any, keymap: Keymap, empty: list[int]) -> int:
        """Shift's keycode (mapped to a scratch keycode if a client took it off the keymap)."""
        return self._code(d, named_keysym(SHIFT), keymap, empty, set())[0]

    def press_combos(self, d: Any, combos: Sequence[Combo], down: bool = True, up: bool = True) -> None:
        """Press (and/or release) each combo in turn: modifiers down, key, modifiers up."""
        from Xlib import X

        keymap, empty = self._keymap(d)
        used: set[int] = set()
        for combo in combos:
            codes = [self._code(d, named_keysym(name), keymap, empty, used)[0] for name in combo.modifiers]
            code, shifted = self._code(d, combo.keysym, keymap, empty, used)
            if shifted and named_keysym(SHIFT) not in {named_keysym(m) for m in combo.modifiers}:
                codes.append(self._shift(d, keymap, empty))
            used.add(code)
            sequence = [*codes, code]
            if down:
                for each in sequence:
                    d.xtest_fake_input(X.KeyPress, each)
            if up:
                for each in reversed(sequence):
                    d.xtest_fake_input(X.KeyRelease, each)
        d.sync()

    def type_text(self, d: Any, text: str) -> None:
        """Type ``text`` as key presses ("\\n" is Return); shift is held for shifted characters."""
        from Xlib import X

        keysyms = [char_keysym(char) for char in text.replace("\r\n", "\n")]
        keymap, empty = self._keymap(d)
        shift = self._shift(d, keymap, empty)
        used: set[int] = set()
        for keysym in keysyms:
            code, shifted = self._code(d, keysym, keymap, empty, used)
            if code in self._scratch:
                self._scratch.move_to_end(code)
            used.add(code)
            if shifted:
                d.xtest_fake_input(X.KeyPress, shift)
            d.xtest_fake_input(X.KeyPress, code)
            d.xtest_fake_input(X.KeyRelease, code)
            if shifted:
                d.xtest_fake_input(X.KeyRelease, shift)
        d.sync()
