"""Desktop: operate a real Linux desktop through screenshots, mouse and keyboard.

The agent gets the 19 tools of Anthropic's ``computer_20251124`` schema
(:mod:`omnienv.envs.desktop.tools`: ``screenshot``, clicks at ``[x, y]``, ``type``, ``key``,
``terminate(status)``...). Each episode runs on a fresh local Xvfb display taken from a warm pool
(:mod:`omnienv.sandboxes.xvfb`) or, with ``backend="e2b"``, on an E2B Desktop sandbox.

Read it top to bottom:

1. the tasks (:mod:`omnienv.envs.desktop.tasks`): 35 of them over six Debian apps (a terminal, a
   text editor, a spreadsheet, a file manager, a calculator, a clock;
   :mod:`omnienv.envs.desktop.apps`), each with a check of the desktop's real state;
2. the reward: a rubric that runs the task's check when the episode ends (files read without
   following symlinks, from the home of the app that must have written them; which process owns
   a window and where it is; who owns the selection; never a title); ``terminate("success")``
   ends the episode but earns nothing by itself;
3. the environment: ``setup`` takes a display, writes the task's files, opens its apps in the
   session's sandbox and puts their windows at fixed places; models that think in a normalised
   space (Qwen3-VL's 0-1000) get their points rescaled with ``Desktop(coordinate_space=(1000, 1000))``.

A display that dies mid-episode raises :class:`~omnienv.sandboxes.desktop.DisplayError` (an
``EnvironmentFailure``): the episode is flagged as failed and never scored. A display that a
program of the agent's froze or cut off ends the episode as the agent's doing
(:class:`~omnienv.core.errors.AgentCausedEnd`), scored.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from typing import ClassVar, Literal

from omnienv.core import AgentCausedEnd, AsyncEnvironment, Rubric, StepResult, Task, ToolCall, ToolError
from omnienv.core.threads import to_blocking_thread
from omnienv.envs.desktop.apps import app_command
from omnienv.envs.desktop.checks import DesktopTask
from omnienv.envs.desktop.coordinates import Coordinates
from omnienv.envs.desktop.tasks import core_tasks, find_task
from omnienv.envs.desktop.tools import COMMAND_SECONDS, MAX_TYPE, ComputerTools
from omnienv.sandboxes.desktop import DesktopSession, DisplayError
from omnienv.sandboxes.xvfb import DisplayPool, DisplaySpec, XvfbDisplay, missing_programs, require_sandbox, shared_pool
from omnienv.sandboxes.xvfb.display import SLOW_CALL, X_TIMEOUT
from omnienv.sandboxes.xvfb.input import TYPE_CHUNK
from omnienv.sandboxes.xvfb.shell import GRACE

__all__ = ["Coordinates", "Desktop", "task_completed"]

SETTLE_SECONDS = 2.0  # how long a check may wait for the desktop to catch up (a shell writing a file)
PROMPT = (
    "You are operating a Linux desktop of {width}x{height} pixels with {apps} open. {coordinates}\n"
    "Your home directory is {home}.{own_homes}\n\n"
    "Task: {instruction}\n\n"
    "Call screenshot first to see the screen, then drive with the click/type/key tools. "
    "Only one tool call per turn. End with terminate."
)
OWN_HOME = " The {kind} keeps its files in a home folder of its own, which the terminal does not see."


async def _nothing_to_check(desktop: DesktopSession) -> bool:
    return False


NO_TASK = DesktopTask("explore", "Explore the desktop, then call terminate.", _nothing_to_check)


# -- 2. the reward -------------------------------------------------------------------------------


async def task_completed(env: Desktop) -> float:
    """1 when the desktop's real state satisfies the task's check, else 0."""
    if env.verdict is None:
        env.verdict = await env.verify()
    return 1.0 if env.verdict else 0.0


# -- 3. the environment --------------------------------------------------------------------------


class Desktop(ComputerTools, AsyncEnvironment):
    """Operate a Linux desktop (terminal, editor, spreadsheet, file manager, calculator) by mouse and keyboard."""

    name = "desktop"
    shows_images = True
    extras = ("desktop",)
    system_packages = (
        "bubblewrap", "xvfb", "xdotool", "wmctrl", "openbox", "xterm", "x11-apps", "gnumeric", "pcmanfm",
        "xfonts-base",
    )  # fmt: skip
    splits = ("train", "test")
    max_turns = 30
    rubric = Rubric(task_completed)
    policies: ClassVar[dict[str, str]] = {"scripted": "omnienv.envs.desktop.player:DesktopScripted"}

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
        spec = find_task(task.id) if task is not None else NO_TASK
        apps = [app_command(app) for app in spec.apps]
        for path, text in spec.files.items():
            await desktop.write_file(path, text.encode())
        for name, app, _ in apps:
            seeds = {**app.settings, **spec.app_files.get(name, {})} if app.own_home else {}
            for path, text in seeds.items():
                await desktop.write_file(path, text.encode(), app=name)
        for name, app, command in apps:
            await desktop.launch(command, name, own_home=app.own_home)
        for name, app, _ in apps:
            await desktop.wait_for_app(name)
            await desktop.wait_settled(name)
            if app.place is not None:
                await desktop.place(name, *app.place)
        return self.render_prompt(task, rng)

    async def step(self, call: ToolCall) -> StepResult:
        """Each step may wait on a display that a program of the agent's holds for a bounded time in all
        (it ends the episode as the agent's doing past that), never past the server's step deadline."""
        if self._desktop is not None:
            self._desktop.begin_step()
        return await super().step(call)

    def render_prompt(self, task: Task | None, rng: random.Random) -> str:
        """The prompt follows from the task alone: datasets render it without a display."""
        spec = find_task(task.id) if task is not None else NO_TASK
        apps = [app for _, app, _ in (app_command(name) for name in spec.apps)]
        return PROMPT.format(
            apps=" and ".join(f"the {app.kind} ({app.program})" for app in apps),
            width=self.resolution[0],
            height=self.resolution[1],
            coordinates=self.coordinates.describe(),
            home="~",
            own_homes="".join(OWN_HOME.format(kind=app.kind) for app in apps if app.own_home),
            instruction=spec.instruction,
        )

    async def verify(self) -> bool:
        """Run the task's check, giving the desktop a moment to catch up (a shell writing a file)."""
        task = self.task
        if task is None or self._desktop is None:
            return False
        check = find_task(task.id).check
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            try:
                if await check(self._desktop):
                    return True
            except AgentCausedEnd:  # the agent froze or cut off its display: nothing can be checked
                return False
            except ToolError:  # the desktop changed under the check (a window closing): look again
                pass
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)

    @classmethod
    def step_seconds(cls) -> float:
        """A step at its longest: a command's minute and the shell's grace, or the longest text typed
        on a display the agent's programs hold (:data:`X_TIMEOUT` of slow X calls, each other call
        under :data:`SLOW_CALL`), and the check and a screenshot after either."""
        typing = X_TIMEOUT + math.ceil(MAX_TYPE / TYPE_CHUNK) * SLOW_CALL
        return max(COMMAND_SECONDS + GRACE, typing) + X_TIMEOUT + 2 * SETTLE_SECONDS

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

            return await to_blocking_thread(E2BDesktop.create, *self.resolution)
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
