"""The desktop tasks, each with a check that reads the desktop's real state at the end.

A check looks at files in the session's home directory (never through a symlink), at which
process owns a window and where that window really is, and at an app's own state (who owns the
selection, and what it holds): never at what the agent said, nor at a window title. Apps open
at fixed places (``-geometry``), so a scripted policy and a human can both find them; the prompt
does not depend on that.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from omnienv.core import Task
from omnienv.sandboxes.desktop import DesktopSession, Window

__all__ = ["APPS", "DESKTOP_TASKS", "DesktopTask", "core_tasks", "find_task"]

Check = Callable[[DesktopSession], Awaitable[bool]]

# app name -> the command line that starts it (at a fixed place, so scripted players can find it)
APPS: dict[str, str] = {
    "terminal": "xterm -geometry 80x24+10+10",
    "clock": "xclock -geometry 150x150+600+450",
    "calculator": "xcalc -geometry +40+400",
}
EDITOR_GEOMETRY = "480x360+520+10"


def editor(path: str) -> str:
    return f"xedit -geometry {EDITOR_GEOMETRY} {path}"


@dataclass(frozen=True, slots=True)
class DesktopTask:
    id: str
    instruction: str
    check: Check
    apps: tuple[str, ...] = ("terminal",)
    files: dict[str, str] = field(default_factory=dict)
    answer: str | None = None


# -- checks: small factories over facts the agent cannot fake in a call or two -------------------
#
# Files are read without following symlinks. A window counts when its X client is the very
# process the environment launched (its pid, as the X server saw it connect), or a process of the
# session running the expected program; never by its title, which any client can set.


def file_is(path: str, text: str) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        data = await desktop.read_file(path)
        return data is not None and data.decode("utf-8", "replace").strip() == text

    return check


def file_contains(path: str, text: str) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        data = await desktop.read_file(path)
        return data is not None and text in data.decode("utf-8", "replace")

    return check


def file_missing(path: str) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        return await desktop.path_kind(path) is None

    return check


def is_directory(path: str) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        return await desktop.path_kind(path) == "dir"

    return check


def app_open(name: str) -> Check:
    """The app the environment launched as ``name`` still runs and shows a window."""

    async def check(desktop: DesktopSession) -> bool:
        return await desktop.app_alive(name) and bool(await desktop.app_windows(name))

    return check


def app_closed(name: str) -> Check:
    """The app the environment launched as ``name`` has exited (hiding its window is not closing it)."""

    async def check(desktop: DesktopSession) -> bool:
        return name in desktop.apps and not await desktop.app_alive(name)

    return check


def program_window(program: str) -> Check:
    """Some process of the session running ``program`` (its executable, not its title) shows a window."""

    async def check(desktop: DesktopSession) -> bool:
        for window in await desktop.windows():
            if (
                window.viewable
                and window.exe
                and os.path.basename(window.exe) == program
                and window.pid is not None
                and await desktop.in_session(window.pid)
            ):
                return True
        return False

    return check


def app_window_where(name: str, test: Callable[[DesktopSession, Window], bool]) -> Check:
    """A window of the app launched as ``name`` passes ``test`` (its real geometry)."""

    async def check(desktop: DesktopSession) -> bool:
        return any(test(desktop, window) for window in await desktop.app_windows(name))

    return check


def selected_in(name: str, text: str) -> Check:
    """The app launched as ``name`` owns the PRIMARY selection, and it holds ``text``."""

    async def check(desktop: DesktopSession) -> bool:
        app = desktop.apps.get(name)
        found = await desktop.selection(owner=name)
        return app is not None and found is not None and found[0] == app.pid and found[1].strip() == text

    return check


def all_of(*checks: Check) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        for part in checks:
            if not await part(desktop):
                return False
        return True

    return check


def _maximised(desktop: DesktopSession, window: Window) -> bool:
    return window.width >= 0.9 * desktop.width and window.height >= 0.8 * desktop.height


def _left_half(desktop: DesktopSession, window: Window) -> bool:
    return window.x + window.width / 2 < desktop.width / 2


# -- the tasks -----------------------------------------------------------------------------------

TRAIN = [
    DesktopTask(
        "terminal-echo",
        "Using the terminal, write the text hello-rl into a file named hello.txt in your home directory.",
        file_is("hello.txt", "hello-rl"),
    ),
    DesktopTask(
        "make-directory",
        "Create the directory projects/alpha inside your home directory.",
        is_directory("projects/alpha"),
    ),
    DesktopTask(
        "rename-file",
        "Rename the file draft.txt in your home directory to final.txt, keeping its contents.",
        all_of(file_is("final.txt", "first draft"), file_missing("draft.txt")),
        files={"draft.txt": "first draft\n"},
    ),
    DesktopTask(
        "editor-type",
        "The text editor has notes.txt open. Type the line 'meeting at 10' into it and save the file.",
        file_contains("notes.txt", "meeting at 10"),
        apps=("editor:notes.txt",),
        files={"notes.txt": ""},
    ),
    DesktopTask(
        "terminal-select",
        "In the terminal, print the word selectme42 (for example with echo), then select that word "
        "on the screen with the mouse, so that it could be pasted elsewhere.",
        selected_in("terminal", "selectme42"),
    ),
    DesktopTask(
        "close-clock",
        "Close the clock window, and leave the terminal open.",
        all_of(app_closed("clock"), app_open("terminal")),
        apps=("terminal", "clock"),
    ),
    DesktopTask(
        "open-calculator",
        "Open the calculator application (the program is called xcalc).",
        program_window("xcalc"),
    ),
    DesktopTask(
        "calculator-answer",
        "Use the calculator to compute 37 × 43, then write the result (digits only) into answer.txt "
        "in your home directory.",
        file_is("answer.txt", "1591"),
        apps=("terminal", "calculator"),
        answer="1591",
    ),
]

TEST = [
    DesktopTask(
        "second-line",
        "Write the second line of source.txt (in your home directory) into a new file line.txt next to it.",
        file_is("line.txt", "beta"),
        files={"source.txt": "alpha\nbeta\ngamma\n"},
    ),
    DesktopTask(
        "maximize-terminal",
        "Maximize the terminal window so that it fills the screen.",
        app_window_where("terminal", _maximised),
    ),
    DesktopTask(
        "move-clock",
        "Drag the clock window into the left half of the screen.",
        app_window_where("clock", _left_half),
        apps=("terminal", "clock"),
    ),
    DesktopTask(
        "editor-replace",
        "The text editor has todo.txt open. Replace the word 'bread' with 'milk' and save the file.",
        file_is("todo.txt", "buy milk"),
        apps=("editor:todo.txt",),
        files={"todo.txt": "buy bread\n"},
    ),
]

DESKTOP_TASKS: dict[str, DesktopTask] = {
    **{f"train/{task.id}": task for task in TRAIN},
    **{f"test/{task.id}": task for task in TEST},
}


def app_command(app: str) -> tuple[str, str]:
    """(app name, command line) for ``"terminal"`` or ``"editor:notes.txt"``."""
    if app.startswith("editor:"):
        return "editor", editor(app.partition(":")[2])
    return app, APPS[app]


def core_tasks(split: str) -> list[Task]:
    return [
        Task(task_id, split, {"instruction": task.instruction, "apps": list(task.apps)}, task.answer)
        for task_id, task in DESKTOP_TASKS.items()
        if task_id.startswith(f"{split}/")
    ]


def find_task(task_id: str) -> DesktopTask:
    return DESKTOP_TASKS[task_id]
