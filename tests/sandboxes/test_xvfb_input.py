"""Input on a display whose window manager is slow: a click reaches its app before the keys sent after it.

openbox grabs a click on a window to focus it, which freezes the pointer until openbox replays the
click. On a loaded machine that takes a while; keys are not frozen, so keys sent meanwhile would
reach the app first, with the button still down in their state. The window manager is stopped
(SIGSTOP) to make that while deterministic.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from omnienv.sandboxes.procfs import process_tree
from omnienv.sandboxes.xvfb import XvfbDisplay, missing_programs
from omnienv.sandboxes.xvfb.input import BUTTON_MASKS

pytestmark = pytest.mark.skipif(
    bool(missing_programs(("Xvfb", "bwrap", "openbox", "xcalc"))),
    reason="X programs or bubblewrap missing: run 'make system-deps'",
)

DISPLAY_AT = (120, 70)
"""A point on xcalc's display, the calculator placed at +40+40."""


def window_manager_pid(display: XvfbDisplay) -> int:
    """The host pid of openbox itself (the display started it inside a sandbox)."""
    assert display.window_manager is not None
    for pid in process_tree(display.window_manager.pid):
        with open(f"/proc/{pid}/comm") as handle:
            if handle.read().strip() == "openbox":
                return pid
    raise AssertionError("openbox is not running")


async def calculator_shows(display: XvfbDisplay, text: str) -> str | None:
    """What the calculator's display holds once it reads ``text`` (or after 10 s): clicking it selects it."""
    deadline = time.monotonic() + 10
    found = None
    while time.monotonic() < deadline:
        found = await display.selection(owner="calculator")
        if found is not None and found[1].strip() == text:
            break
        await asyncio.sleep(0.05)
    return None if found is None else found[1].strip()


def test_keys_after_a_click_wait_for_a_slow_window_manager_to_deliver_it(display: XvfbDisplay) -> None:
    async def run() -> None:
        await display.launch("xcalc -geometry +40+40", "calculator")
        await display.wait_for_app("calculator")
        await display.click(*DISPLAY_AT)  # selects the display, whose text the test reads from then on
        await display.type_text("9")
        assert await calculator_shows(display, "9") == "9"
        manager = window_manager_pid(display)
        os.kill(manager, signal.SIGSTOP)
        try:
            click = asyncio.create_task(display.click(*DISPLAY_AT))
            deadline = time.monotonic() + 10
            while not await display._blocking(display.x.pointer_state) & BUTTON_MASKS[1]:
                assert time.monotonic() < deadline, "openbox did not freeze the pointer on the click"
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            assert not click.done(), "the click returned while its release was still held back"
        finally:
            os.kill(manager, signal.SIGCONT)
        await click
        await display.key("space")  # xcalc: clear
        await display.type_text("1764r")  # r: square root; xcalc ignores a digit typed with a button down
        assert await calculator_shows(display, "42") == "42"

    asyncio.run(run())
