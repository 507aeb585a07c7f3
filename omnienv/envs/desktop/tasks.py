"""The desktop tasks, each with a check that reads the desktop's real state at the end.

A check looks at files in the session's home directory, window titles and window geometry,
never at what the agent said. Apps open at fixed places (``-geometry``), so a scripted policy
and a human can both find them; the prompt does not depend on that.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from omnienv.core import Task
from omnienv.sandboxes.desktop import DesktopSession

__all__ = ["APPS", "DESKTOP_TASKS", "DesktopTask", "core_tasks", "find_task"]

Check = Callable[[DesktopSession], Awaitable[bool]]

# app name -> (command line, a regular expression matching its window title)
APPS: dict[str, tuple[str, str]] = {
    "terminal": ("xterm -geometry 80x24+10+10", "^xterm$"),
    "clock": ("xclock -geometry 150x150+600+450", "^xclock$"),
    "calculator": ("xcalc -geometry +40+400", "^Calculator$"),
}
EDITOR_GEOMETRY = "480x360+520+10"


def editor(path: str) -> tuple[str, str]:
    return (f"xedit -geometry {EDITOR_GEOMETRY} {path}", "^xedit$")


@dataclass(frozen=True, slots=True)
class DesktopTask:
    id: str
    instruction: str
    check: Check
    apps: tuple[str, ...] = ("terminal",)
    files: dict[str, str] = field(default_factory=dict)
    answer: str | None = None


# -- checks: small factories over the session's real state ---------------------------------------


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
        return await desktop.read_file(path) is None and not await desktop.is_dir(path)

    return check


def is_directory(path: str) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        return await desktop.is_dir(path)

    return check


def window_titled(title: str, present: bool = True) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        return (title in await desktop.window_titles()) is present

    return check


Geometry = tuple[int, int, int, int]


def window_where(title_pattern: str, test: Callable[[DesktopSession, Geometry], bool]) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        geometry = await desktop.window_geometry(title_pattern)
        return geometry is not None and test(desktop, geometry)

    return check


def all_of(*checks: Check) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        for part in checks:
            if not await part(desktop):
                return False
        return True

    return check


def _maximised(desktop: DesktopSession, geometry: Geometry) -> bool:
    _, _, width, height = geometry
    return width >= 0.9 * desktop.width and height >= 0.8 * desktop.height


def _left_half(desktop: DesktopSession, geometry: Geometry) -> bool:
    x, _, width, _ = geometry
    return x + width / 2 < desktop.width / 2


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
        "terminal-title",
        "Change the title of the terminal window to build-42.",
        window_titled("build-42"),
    ),
    DesktopTask(
        "close-clock",
        "Close the clock window, and leave the terminal open.",
        all_of(window_titled("xclock", present=False), window_titled("xterm")),
        apps=("terminal", "clock"),
    ),
    DesktopTask(
        "open-calculator",
        "Open the calculator application (the program is called xcalc).",
        window_titled("Calculator"),
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
        window_where("^xterm$", _maximised),
    ),
    DesktopTask(
        "move-clock",
        "Drag the clock window into the left half of the screen.",
        window_where("^xclock$", _left_half),
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
    """(command line, window title pattern) for ``"terminal"`` or ``"editor:notes.txt"``."""
    if app.startswith("editor:"):
        return editor(app.partition(":")[2])
    return APPS[app]


def core_tasks(split: str) -> list[Task]:
    return [
        Task(task_id, split, {"instruction": task.instruction, "apps": list(task.apps)}, task.answer)
        for task_id, task in DESKTOP_TASKS.items() if task_id.startswith(f"{split}/")
    ]


def find_task(task_id: str) -> DesktopTask:
    return DESKTOP_TASKS[task_id]
