"""The apps a desktop task can open: Debian programs, each started at a fixed place.

Fixed places let a scripted player (and a person reading a trajectory) find each app's controls;
the prompt never depends on them. The document apps (the editor, the spreadsheet, the file
manager) get a **home of their own** (see :mod:`omnienv.sandboxes.desktop`): their documents are
checked there, where only the app can write, so a task that asks for the spreadsheet cannot be
passed by a shell writing the file. The terminal, the clock and the calculator share the
session's home, which ``run_command`` sees too: for the terminal's tasks a shell is the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["APPS", "AppSpec", "app_command"]


@dataclass(frozen=True, slots=True)
class AppSpec:
    """How an app starts and what the prompt calls it: its command line (``{document}`` is the file
    it opens, from the task's ``"app:document"``), whether it gets a home of its own, where its
    window goes when the program takes no ``-geometry`` (frame corner x, y and client width,
    height), and the settings files seeded in its own home."""

    command: str
    kind: str
    program: str
    own_home: bool = False
    place: tuple[int, int, int, int] | None = None
    settings: Mapping[str, str] = field(default_factory=dict)


FILE_MANAGER_SETTINGS = {
    # a detailed list sorted by name, so that entries sit at predictable rows
    ".config/pcmanfm/default/pcmanfm.conf": "[ui]\nview_mode=list\nshow_hidden=0\nsort=name;ascending;\n",
    # no terminal: "Open current folder in terminal" would hand the agent a shell with this home
    ".config/libfm/libfm.conf": "[config]\nterminal=false\nuse_trash=1\nsingle_click=0\n",
}

APPS: dict[str, AppSpec] = {
    "terminal": AppSpec("xterm -geometry 80x24+10+10", "terminal", "xterm"),
    "clock": AppSpec("xclock -geometry 150x150+600+450", "clock", "xclock"),
    "calculator": AppSpec("xcalc -geometry +40+400", "calculator", "xcalc"),
    "editor": AppSpec("xedit -geometry 480x360+520+10 {document}", "text editor", "xedit", own_home=True),
    "spreadsheet": AppSpec("gnumeric --geometry=900x620+50+40 {document}", "spreadsheet", "Gnumeric", own_home=True),
    "files": AppSpec(
        "pcmanfm /home/user",
        "file manager",
        "PCManFM",
        own_home=True,
        place=(200, 100, 640, 480),
        settings=FILE_MANAGER_SETTINGS,
    ),
}


def app_command(app: str) -> tuple[str, AppSpec, str]:
    """(name, spec, command line) for a task's ``"terminal"`` or ``"editor:notes.txt"``."""
    name, _, document = app.partition(":")
    spec = APPS[name]
    return name, spec, spec.command.format(document=document).strip()
