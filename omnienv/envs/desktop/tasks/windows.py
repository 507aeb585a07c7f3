"""Window tasks: which process shows a window, and where the X server really has it.

A window is the launched app's when its X client is that very process; hiding a window is not
closing it, and renaming another window makes it nobody's clock. Moving a window with a
program (``wmctrl`` in the terminal) moves the real window, so it counts as much as a drag.
"""

from __future__ import annotations

from omnienv.envs.desktop.checks import (
    DesktopTask,
    all_of,
    app_closed,
    app_open,
    app_window_where,
    in_left_half,
    in_lower_half,
    maximised,
    program_window,
)

__all__ = ["TEST", "TRAIN"]

TRAIN = [
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
        "move-terminal-down",
        "Drag the terminal window into the bottom half of the screen (its top edge below the middle).",
        app_window_where("terminal", in_lower_half),
    ),
]

TEST = [
    DesktopTask(
        "maximize-terminal",
        "Maximize the terminal window so that it fills the screen.",
        app_window_where("terminal", maximised),
    ),
    DesktopTask(
        "move-clock",
        "Drag the clock window into the left half of the screen.",
        app_window_where("clock", in_left_half),
        apps=("terminal", "clock"),
    ),
    DesktopTask(
        "close-terminal",
        "Close the terminal, and leave the clock open.",
        all_of(app_closed("terminal"), app_open("clock")),
        apps=("terminal", "clock"),
    ),
]
