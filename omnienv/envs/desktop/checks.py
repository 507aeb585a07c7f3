"""What a desktop task is, and the checks that read the desktop's real state when it ends.

A check looks at files (read without following a symlink) in the session's home or in an app's
home of its own, at which process owns a window and where that window really is, and at an app's
own state (who owns the selection, and what it holds): never at what the agent said, nor at a
window title, which any X client can set on any window.

A window counts when its X client is the very process the environment launched (its pid, as the
X server saw it connect), or a process of the session running the expected program. A document
counts when it is in the home of the app that must have written it: no other program of the
session mounts that home (see :mod:`omnienv.envs.desktop.apps`).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from omnienv.sandboxes.desktop import DesktopSession, Window

__all__ = [
    "Check",
    "DesktopTask",
    "all_of",
    "app_closed",
    "app_open",
    "app_window_where",
    "file_contains",
    "file_is",
    "file_missing",
    "in_left_half",
    "in_lower_half",
    "is_directory",
    "maximised",
    "program_window",
    "selected_in",
    "trashed",
]

Check = Callable[[DesktopSession], Awaitable[bool]]
TRASH = ".local/share/Trash/files"
"""Where a freedesktop.org file manager moves what it deletes, in the home it runs with."""


@dataclass(frozen=True, slots=True)
class DesktopTask:
    """One task: what the agent is told, the apps that open (``"editor:notes.txt"`` opens a
    document), the files the session's home starts with, the files each app's own home starts
    with, and the check of the end state. ``answer`` is for graders only, never for the agent."""

    id: str
    instruction: str
    check: Check
    apps: tuple[str, ...] = ("terminal",)
    files: Mapping[str, str] = field(default_factory=dict)
    app_files: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    answer: str | None = None


# -- files -----------------------------------------------------------------------------------------


async def _text(desktop: DesktopSession, path: str, app: str | None) -> str | None:
    data = await desktop.read_file(path, app)
    return None if data is None else data.decode("utf-8", "replace")


def file_is(path: str, text: str, app: str | None = None) -> Check:
    """The file holds ``text`` (surrounding whitespace aside)."""

    async def check(desktop: DesktopSession) -> bool:
        found = await _text(desktop, path, app)
        return found is not None and found.strip() == text

    return check


def file_contains(path: str, text: str, app: str | None = None) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        found = await _text(desktop, path, app)
        return found is not None and text in found

    return check


def file_missing(path: str, app: str | None = None) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        return await desktop.path_kind(path, app) is None

    return check


def is_directory(path: str, app: str | None = None) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        return await desktop.path_kind(path, app) == "dir"

    return check


def trashed(name: str, text: str, app: str) -> Check:
    """The app moved the file ``name`` (holding ``text``) to its trash, and it is gone from the home."""
    return all_of(file_missing(name, app), file_is(f"{TRASH}/{name}", text, app))


# -- windows and the selection ------------------------------------------------------------------


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


def maximised(desktop: DesktopSession, window: Window) -> bool:
    return window.width >= 0.9 * desktop.width and window.height >= 0.8 * desktop.height


def in_left_half(desktop: DesktopSession, window: Window) -> bool:
    return window.x + window.width / 2 < desktop.width / 2


def in_lower_half(desktop: DesktopSession, window: Window) -> bool:
    return window.y >= desktop.height / 2


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
