"""What the agent's mouse and keyboard actions become on a local display: XTEST events.

:class:`XInput` is the input half of :class:`~omnienv.sandboxes.xvfb.display.XvfbDisplay`: each
action is a few requests on the host's own X connection (:class:`~omnienv.sandboxes.xvfb.xclient.XClient`),
run through the display's deadline (``_blocking``). Keys and modifiers arrive validated
(:mod:`omnienv.sandboxes.desktop_keys`); coordinates arrive in pixels.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from omnienv.sandboxes.desktop import (
    BUTTONS,
    CLICK_SETTLE,
    SCROLL_BUTTONS,
    DesktopSession,
    drag_path,
    modifiers,
    parse_keys,
)
from omnienv.sandboxes.xvfb.xclient import XClient

__all__ = ["XInput"]

T = TypeVar("T")
MULTI_CLICK_GAP = 0.03
DELIVERY_TIMEOUT = 5.0
"""How long a pointer action waits for its release to be delivered (a window manager replays it)."""
BUTTON_MASKS = {button: 1 << (7 + button) for button in range(1, 6)}
"""X's state bit of each button that has one (Button1Mask...); 6 and 7, horizontal scroll, have none."""
TYPE_CHUNK = 256


class XInput(DesktopSession):
    """Mouse and keyboard actions over XTEST; the display provides ``x`` and ``_blocking``."""

    x: XClient
    _settle_until: float = 0.0

    async def _blocking(self, fn: Callable[..., T], *args: Any) -> T:
        raise NotImplementedError

    async def _settle(self) -> None:
        wait = self._settle_until - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)

    async def click(self, x: int, y: int, button: str = "left", repeat: int = 1, held: str | None = None) -> None:
        code = BUTTONS[button]
        async with self._holding(held):
            for index in range(repeat):
                if index:
                    await asyncio.sleep(MULTI_CLICK_GAP)
                await self._blocking(self.x.buttons, [(code, True), (code, False)], (x, y))
            await self._delivered(code)

    async def move(self, x: int, y: int) -> None:
        await self._blocking(self.x.move, x, y)

    async def mouse_button(self, pressed: bool, at: tuple[int, int] | None = None) -> None:
        await self._blocking(self.x.buttons, [(1, pressed)], at)
        if pressed:  # held on purpose: its state stays down, and the window manager focuses meanwhile
            self._settle_until = time.monotonic() + CLICK_SETTLE
        else:
            await self._delivered(1)

    async def drag(self, start: tuple[int, int], end: tuple[int, int], held: str | None = None) -> None:
        """Press, move in steps, release: window managers and apps start a drag on motion past a threshold."""
        async with self._holding(held):
            try:
                await self._blocking(self.x.buttons, [(1, True)], start)
                await asyncio.sleep(0.05)
                for point in drag_path(start, end):
                    await self._blocking(self.x.move, *point)
                    await asyncio.sleep(0.02)
                await asyncio.sleep(0.05)
            finally:
                await self._blocking(self.x.buttons, [(1, False)])
                await self._delivered(1)

    async def scroll(self, x: int, y: int, direction: str, amount: int, held: str | None = None) -> None:
        code = SCROLL_BUTTONS[direction]
        async with self._holding(held):
            await self._blocking(self.x.buttons, [(code, True), (code, False)] * amount, (x, y))
            await self._delivered(code)

    @contextlib.asynccontextmanager
    async def _holding(self, held: str | None) -> AsyncIterator[None]:
        """Keep ``held``'s modifiers pressed, as keys, until the pointer action inside was delivered."""
        words = modifiers(held)
        combos = parse_keys(" ".join(words)) if words else []
        if combos:
            await self._blocking(self.x.press_combos, combos, True, False)
        try:
            yield
        finally:
            if combos:
                await self._blocking(self.x.press_combos, list(reversed(combos)), False, True)

    async def _delivered(self, button: int) -> None:
        """Wait, at most :data:`DELIVERY_TIMEOUT`, until the server has delivered ``button``'s release.

        A window manager that grabs clicks to focus the window (openbox) freezes the pointer until
        it replays the click to the app. Keys are not frozen: sent before the replay, they reach
        the app first, with the button still down in their state (xcalc drops such digits), and a
        modifier released meanwhile is missing from the click.
        """
        mask = BUTTON_MASKS.get(button, 0)
        deadline = time.monotonic() + DELIVERY_TIMEOUT
        while mask and await self._blocking(self.x.pointer_state) & mask and time.monotonic() < deadline:
            await asyncio.sleep(0.002)
        self._settle_until = time.monotonic() + CLICK_SETTLE

    async def type_text(self, text: str) -> None:
        await self._settle()
        for start in range(0, len(text), TYPE_CHUNK):
            await self._blocking(self.x.type_text, text[start : start + TYPE_CHUNK])

    async def key(self, keys: str) -> None:
        combos = parse_keys(keys)
        await self._settle()
        await self._blocking(self.x.press_combos, combos)

    async def hold_key(self, keys: str, seconds: float) -> None:
        combos = parse_keys(keys)
        await self._settle()
        await self._blocking(self.x.press_combos, combos, True, False)
        try:
            await asyncio.sleep(seconds)
        finally:
            await self._blocking(self.x.press_combos, list(reversed(combos)), False, True)

    async def cursor(self) -> tuple[int, int]:
        return await self._blocking(self.x.pointer)
