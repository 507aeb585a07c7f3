"""The 19 computer-use tools of Anthropic's ``computer_20251124`` schema, as the reference defines them.

Each tool validates its arguments (coordinates on the screen, known key names, bounded amounts)
and becomes input on the session's desktop; a mistake is a :class:`~omnienv.core.ToolError`, an
ordinary observation the agent can learn from. :class:`ComputerTools` is the tool half of
:class:`~omnienv.envs.desktop.env.Desktop`, which provides the desktop, the coordinate space and
the check ``terminate`` runs.
"""

from __future__ import annotations

import asyncio

from omnienv.core import ImageBlock, ToolError, ToolResult, tool
from omnienv.envs.desktop.coordinates import Coordinates
from omnienv.sandboxes.desktop import DesktopSession

__all__ = ["ComputerTools"]

MAX_WAIT = 60.0
MAX_HOLD = 10.0
MAX_SCROLL = 50
MAX_TYPE = 20_000
COMMAND_SECONDS = 60
SCROLL_DIRECTIONS = ("up", "down", "left", "right")


class ComputerTools:
    """Screenshots, mouse, keyboard, a shell and ``terminate``, on ``self.desktop``."""

    coordinates: Coordinates
    screenshot_after_action: bool
    terminate_status: str | None
    verdict: bool | None

    @property
    def desktop(self) -> DesktopSession:
        raise NotImplementedError

    async def verify(self) -> bool:
        """Whether the desktop's real state passes the task's check."""
        raise NotImplementedError

    async def _done(self, text: str) -> str | ToolResult:
        if not self.screenshot_after_action:
            return text
        return ToolResult.of([text, ImageBlock(await self.desktop.screenshot())])

    def _px(self, point: list[int], name: str = "coordinate") -> tuple[int, int]:
        return self.coordinates.to_pixels(point, name)

    @tool
    async def screenshot(self) -> ToolResult:
        """Take a screenshot of the whole screen."""
        png = await self.desktop.screenshot()
        width, height = self.coordinates.space
        return ToolResult.of([ImageBlock(png), f"screenshot {width}x{height}"])

    @tool
    async def cursor_position(self) -> str:
        """Report where the mouse cursor is, as "x,y"."""
        x, y = self.coordinates.from_pixels(*await self.desktop.cursor())
        return f"{x},{y}"

    @tool
    async def get_screen_size(self) -> str:
        """Report the size of the screen (of the coordinate space) as "WxH"."""
        width, height = self.coordinates.space
        return f"{width}x{height}"

    async def _click(self, coordinate: list[int], text: str | None, button: str, repeat: int) -> None:
        x, y = self._px(coordinate)
        await self.desktop.click(x, y, button, repeat, text)

    @tool
    async def left_click(self, coordinate: list[int], text: str | None = None) -> str | ToolResult:
        """Click the left mouse button at a point.

        Args:
            coordinate: [x, y] in pixel space
            text: Modifier keys held during the action (e.g. "shift", "ctrl+shift")
        """
        await self._click(coordinate, text, "left", 1)
        return await self._done(f"Left-clicked at ({coordinate[0]},{coordinate[1]})")

    @tool
    async def right_click(self, coordinate: list[int], text: str | None = None) -> str | ToolResult:
        """Click the right mouse button at a point.

        Args:
            coordinate: [x, y] in pixel space
            text: Modifier keys held during the action (e.g. "shift", "ctrl+shift")
        """
        await self._click(coordinate, text, "right", 1)
        return await self._done(f"Right-clicked at ({coordinate[0]},{coordinate[1]})")

    @tool
    async def middle_click(self, coordinate: list[int], text: str | None = None) -> str | ToolResult:
        """Click the middle mouse button at a point.

        Args:
            coordinate: [x, y] in pixel space
            text: Modifier keys held during the action (e.g. "shift", "ctrl+shift")
        """
        await self._click(coordinate, text, "middle", 1)
        return await self._done(f"Middle-clicked at ({coordinate[0]},{coordinate[1]})")

    @tool
    async def double_click(self, coordinate: list[int], text: str | None = None) -> str | ToolResult:
        """Double-click the left mouse button at a point.

        Args:
            coordinate: [x, y] in pixel space
            text: Modifier keys held during the action (e.g. "shift", "ctrl+shift")
        """
        await self._click(coordinate, text, "left", 2)
        return await self._done(f"Double-clicked at ({coordinate[0]},{coordinate[1]})")

    @tool
    async def triple_click(self, coordinate: list[int], text: str | None = None) -> str | ToolResult:
        """Triple-click the left mouse button at a point (selects a line in most apps).

        Args:
            coordinate: [x, y] in pixel space
            text: Modifier keys held during the action (e.g. "shift", "ctrl+shift")
        """
        await self._click(coordinate, text, "left", 3)
        return await self._done(f"Triple-clicked at ({coordinate[0]},{coordinate[1]})")

    @tool
    async def mouse_move(self, coordinate: list[int]) -> str | ToolResult:
        """Move the mouse cursor to a point without clicking.

        Args:
            coordinate: [x, y] in pixel space
        """
        await self.desktop.move(*self._px(coordinate))
        return await self._done(f"Moved cursor to ({coordinate[0]},{coordinate[1]})")

    @tool
    async def left_click_drag(
        self, start_coordinate: list[int], coordinate: list[int], text: str | None = None
    ) -> str | ToolResult:
        """Press the left button at one point, drag to another, and release.

        Args:
            start_coordinate: [x, y] where the drag starts
            coordinate: [x, y] where the drag ends
            text: Modifier keys held during the action (e.g. "shift", "ctrl+shift")
        """
        start = self._px(start_coordinate, "start_coordinate")
        await self.desktop.drag(start, self._px(coordinate), text)
        (sx, sy), (ex, ey) = start_coordinate, coordinate
        return await self._done(f"Dragged ({sx},{sy})→({ex},{ey})")

    @tool
    async def left_mouse_down(self, coordinate: list[int] | None = None) -> str | ToolResult:
        """Press and hold the left mouse button (at a point, or where the cursor is).

        Args:
            coordinate: [x, y] to move to first; omit to press where the cursor is
        """
        await self.desktop.mouse_button(True, self._px(coordinate) if coordinate is not None else None)
        return await self._done("Left mouse pressed")

    @tool
    async def left_mouse_up(self, coordinate: list[int] | None = None) -> str | ToolResult:
        """Release the left mouse button (at a point, or where the cursor is).

        Args:
            coordinate: [x, y] to move to first; omit to release where the cursor is
        """
        await self.desktop.mouse_button(False, self._px(coordinate) if coordinate is not None else None)
        return await self._done("Left mouse released")

    @tool
    async def scroll(
        self, coordinate: list[int], scroll_direction: str, scroll_amount: int, text: str | None = None
    ) -> str | ToolResult:
        """Scroll the mouse wheel at a point.

        Args:
            coordinate: [x, y] where to scroll
            scroll_direction: "up" | "down" | "left" | "right"
            scroll_amount: How many wheel clicks
            text: Modifier keys held during the action (e.g. "shift", "ctrl+shift")
        """
        direction = scroll_direction.strip().lower()
        if direction not in SCROLL_DIRECTIONS:
            raise ToolError(f"scroll_direction must be one of {', '.join(SCROLL_DIRECTIONS)}; got {scroll_direction!r}")
        if not 0 <= scroll_amount <= MAX_SCROLL:
            raise ToolError(f"scroll_amount must be between 0 and {MAX_SCROLL}, got {scroll_amount}")
        x, y = self._px(coordinate)
        await self.desktop.scroll(x, y, direction, scroll_amount, text)
        return await self._done(f"Scrolled {direction} {scroll_amount} at ({coordinate[0]},{coordinate[1]})")

    @tool(name="type")
    async def type_text(self, text: str) -> str | ToolResult:
        """Type text with the keyboard, as if typed by a person ("\\n" presses Enter).

        Args:
            text: The text to type.
        """
        if len(text) > MAX_TYPE:
            raise ToolError(f"text is too long ({len(text)} characters, at most {MAX_TYPE} per call)")
        await self.desktop.type_text(text)
        return await self._done(f"Typed {len(text)} chars")

    @tool
    async def key(self, keys: str) -> str | ToolResult:
        """Press a key or a key combination.

        Args:
            keys: Key or combo, X key names. e.g. "enter", "ctrl+s", "Page_Down"
        """
        await self.desktop.key(keys)
        return await self._done(f"Pressed {keys}")

    @tool
    async def hold_key(self, keys: str, duration: float) -> str | ToolResult:
        """Hold a key or combination down for some seconds.

        Args:
            keys: Key or combo, X key names. e.g. "shift", "ctrl+a"
            duration: Seconds to hold (at most 10).
        """
        if not 0 <= duration <= MAX_HOLD:
            raise ToolError(f"duration must be between 0 and {MAX_HOLD:g} seconds, got {duration}")
        await self.desktop.hold_key(keys, duration)
        return await self._done(f"Held {keys} for {duration:g}s")

    @tool
    async def wait(self, duration: float) -> str | ToolResult:
        """Wait, to let the screen settle or a program finish.

        Args:
            duration: Seconds to wait (at most 60).
        """
        if not 0 <= duration <= MAX_WAIT:
            raise ToolError(f"duration must be between 0 and {MAX_WAIT:g} seconds, got {duration}")
        await asyncio.sleep(duration)
        self.desktop.require_alive()
        return await self._done(f"Waited {duration:g}s")

    @tool
    async def terminate(self, status: str) -> ToolResult:
        """End the episode. The desktop is then checked: the reward comes from what it shows, not the status.

        Args:
            status: "success" or "failure"
        """
        if status not in ("success", "failure"):
            raise ToolError(f'status must be "success" or "failure", got {status!r}')
        self.terminate_status = status
        self.verdict = await self.verify()
        return ToolResult.of(
            f"Episode terminated: {status}", done=True, info={"terminate_status": status, "success": self.verdict}
        )

    @tool
    async def run_command(self, command: str) -> str:
        """Run a shell command on the desktop machine (in the home directory) and return its output.

        Args:
            command: A bash command line; it is killed after 60 s.
        """
        result = await self.desktop.shell(command, timeout=COMMAND_SECONDS)
        output = result.stdout
        if result.stderr:  # a warning of a command that worked is worth reading too
            output += f"\nSTDERR: {result.stderr}"
        if result.timed_out:
            output += f"\n(killed after {COMMAND_SECONDS} s)"
        elif result.returncode != 0:
            output += f"\n(exit code {result.returncode})"
        return output if output.strip() else "(no output)"
