"""Desktop: operate a real Linux desktop through screenshots, mouse and keyboard.

The agent gets the 19 tools of Anthropic's ``computer_20251124`` schema as the reference
environment defines them (``screenshot``, clicks at ``[x, y]``, ``type``, ``key``,
``terminate(status)``...). Each episode runs on a fresh local Xvfb display taken from a warm
pool (``omnienv.sandboxes.xvfb``) or, with ``backend="e2b"``, on an E2B Desktop sandbox.

Read it top to bottom:

1. coordinates (:mod:`omnienv.envs.desktop.coordinates`): models that think in a normalised space
   (Qwen3-VL's 0-1000) get their points rescaled to pixels with ``Desktop(coordinate_space=(1000, 1000))``;
2. the reward: a rubric that *checks the desktop* when the episode ends (files read without
   following symlinks, which process owns a window and where it is, an app's own state; never a
   title); ``terminate("success")`` ends the episode but earns nothing by itself;
3. the environment: ``setup`` takes a display, writes the task's files and opens its apps in the
   session's sandbox; the tools become X input events (XTEST) from validated arguments.

A display that dies mid-episode raises :class:`~omnienv.sandboxes.desktop.DisplayError` (an
``EnvironmentFailure``): the episode is flagged as failed and never scored. A display that a
program of the agent's froze or cut off ends the episode as the agent's doing
(:class:`~omnienv.core.errors.AgentCausedEnd`), scored.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Literal

from omnienv.core import AgentCausedEnd, AsyncEnvironment, ImageBlock, Rubric, Task, ToolError, ToolResult, tool
from omnienv.envs.desktop.coordinates import Coordinates
from omnienv.envs.desktop.tasks import app_command, core_tasks, find_task
from omnienv.sandboxes.desktop import DesktopSession, DisplayError
from omnienv.sandboxes.xvfb import DisplayPool, DisplaySpec, XvfbDisplay, missing_programs, require_sandbox, shared_pool

__all__ = ["Coordinates", "Desktop", "task_completed", "verify"]

SETTLE_SECONDS = 2.0  # how long a check may wait for the desktop to catch up (a shell writing a file)
MAX_WAIT = 60.0
MAX_HOLD = 10.0
MAX_SCROLL = 50
MAX_TYPE = 20_000
SCROLL_DIRECTIONS = ("up", "down", "left", "right")
PROMPT = (
    "You are operating a Linux desktop ({apps}, {width}x{height}). {coordinates}\n"
    "Your home directory is {home}.\n\n"
    "Task: {instruction}\n\n"
    "Call screenshot first to see the screen, then drive with the click/type/key tools. "
    "Only one tool call per turn. End with terminate."
)


# -- 2. the reward -------------------------------------------------------------------------------


async def task_completed(env: Desktop) -> float:
    """1 when the desktop's real state satisfies the task's check, else 0."""
    if env.verdict is None:
        env.verdict = await verify(env)
    return 1.0 if env.verdict else 0.0


async def verify(env: Desktop) -> bool:
    """Run the task's check, giving the desktop a moment to catch up (a shell writing a file)."""
    task = env.task
    if task is None:
        return False
    check = find_task(task.id).check
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        try:
            if await check(env.desktop):
                return True
        except AgentCausedEnd:  # the agent froze or cut off its display: nothing can be checked
            return False
        except ToolError:  # the desktop changed under the check (a window closing): look again
            pass
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)


# -- 3. the environment --------------------------------------------------------------------------


class Desktop(AsyncEnvironment):
    """Operate a Linux desktop (terminal, text editor, calculator, clock) with mouse and keyboard."""

    name = "desktop"
    splits = ("train", "test")
    max_turns = 30
    rubric = Rubric(task_completed)

    def __init__(
        self,
        *,
        coordinate_space: tuple[int, int] | None = None,
        resolution: tuple[int, int] = (1024, 768),
        screenshot_after_action: bool = False,
        backend: Literal["xvfb", "e2b"] = "xvfb",
        pool: DisplayPool | None = None,
    ) -> None:
        """
        Args:
            coordinate_space: The model's coordinate space, e.g. (1000, 1000) for Qwen3-VL;
                None means pixels.
            resolution: Screen size in pixels.
            screenshot_after_action: Append a fresh screenshot to every action's result.
            backend: "xvfb" (local displays) or "e2b" (E2B Desktop; needs E2B_API_KEY).
            pool: The warm pool to take displays from (default: the shared one for ``resolution``).
        """
        self.coordinates = Coordinates(resolution, coordinate_space)
        self.resolution = resolution
        self.screenshot_after_action = screenshot_after_action
        self.backend = backend
        self.pool = pool
        self._desktop: DesktopSession | None = None
        self.terminate_status: str | None = None
        self.verdict: bool | None = None

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return core_tasks(split)

    @property
    def desktop(self) -> DesktopSession:
        if self._desktop is None:
            raise ToolError("no desktop: call reset() first")
        return self._desktop

    async def setup(self, task: Task | None, rng: random.Random) -> str:
        await self._release()
        self.terminate_status = None
        self.verdict = None
        self._desktop = desktop = await self._acquire()
        spec = find_task(task.id) if task is not None else None
        apps = spec.apps if spec else ("terminal",)
        for path, text in (spec.files if spec else {}).items():
            await desktop.write_file(path, text.encode())
        launched = [app_command(app) for app in apps]
        for name, command in launched:
            await desktop.launch(command, name)
        for name, _ in launched:
            await desktop.wait_for_app(name)
        return PROMPT.format(
            apps=", ".join(app.partition(":")[0] for app in apps),
            width=self.resolution[0],
            height=self.resolution[1],
            coordinates=self.coordinates.describe(),
            home="~",
            instruction=spec.instruction if spec else "Explore the desktop, then call terminate.",
        )

    @classmethod
    def preflight(cls) -> None:
        """A served desktop refuses to start without its programs or a working sandbox."""
        missing = missing_programs(("Xvfb", "bwrap", "openbox"))
        if missing:
            raise DisplayError(f"missing programs {', '.join(missing)}: run 'make system-deps'")
        require_sandbox()

    async def _acquire(self) -> DesktopSession:
        if self.backend == "e2b":
            from omnienv.sandboxes.e2b_desktop import E2BDesktop

            return await asyncio.to_thread(E2BDesktop.create, *self.resolution)
        if self.pool is None:
            self.pool = shared_pool(DisplaySpec(*self.resolution))
        return await self.pool.take()

    async def _release(self) -> None:
        desktop, self._desktop = self._desktop, None
        if isinstance(desktop, XvfbDisplay) and self.pool is not None:
            self.pool.release(desktop)
        elif desktop is not None:
            await desktop.close()

    async def teardown(self) -> None:
        await self._release()

    def state_fields(self) -> dict[str, object]:
        return {
            "screen": list(self.resolution),
            "coordinate_space": list(self.coordinates.space),
            "terminate_status": self.terminate_status,
        }

    async def _done(self, text: str) -> str | ToolResult:
        if not self.screenshot_after_action:
            return text
        return ToolResult.of([text, ImageBlock(await self.desktop.screenshot())])

    def _px(self, point: list[int], name: str = "coordinate") -> tuple[int, int]:
        return self.coordinates.to_pixels(point, name)

    # -- the 19 tools ----------------------------------------------------------------------------

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
        self.verdict = await verify(self)
        return ToolResult.of(
            f"Episode terminated: {status}", done=True, info={"terminate_status": status, "success": self.verdict}
        )

    @tool
    async def run_command(self, command: str) -> str:
        """Run a shell command on the desktop machine (in the home directory) and return its output.

        Args:
            command: A bash command line; it is killed after 60 s.
        """
        result = await self.desktop.shell(command, timeout=60)
        output = result.stdout
        if result.timed_out:
            output += "\n(killed after 60 s)"
        elif result.returncode != 0:
            output += f"\nSTDERR: {result.stderr}" if result.stderr else f"\n(exit code {result.returncode})"
        return output if output.strip() else "(no output)"
