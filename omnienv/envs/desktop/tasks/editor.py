"""Editor tasks: a text file the editor saved in its own home.

The editor (xedit) runs with a home of its own, which no shell of the session mounts: the file
checked there was saved by the editor, not written by ``echo`` in a terminal.
"""

from __future__ import annotations

from omnienv.envs.desktop.checks import DesktopTask, file_contains, file_is

__all__ = ["TEST", "TRAIN"]

TRAIN = [
    DesktopTask(
        "editor-type",
        "The text editor has notes.txt open. Type the line 'meeting at 10' into it and save the file.",
        file_contains("notes.txt", "meeting at 10", app="editor"),
        apps=("editor:notes.txt",),
        app_files={"editor": {"notes.txt": ""}},
    ),
    DesktopTask(
        "editor-append",
        "The text editor has shopping.txt open. Add the line eggs at the end of the list and save the file.",
        file_is("shopping.txt", "milk\nbread\neggs", app="editor"),
        apps=("editor:shopping.txt",),
        app_files={"editor": {"shopping.txt": "milk\nbread\n"}},
    ),
]

TEST = [
    DesktopTask(
        "editor-replace",
        "The text editor has todo.txt open. Replace the word 'bread' with 'milk' and save the file.",
        file_is("todo.txt", "buy milk", app="editor"),
        apps=("editor:todo.txt",),
        app_files={"editor": {"todo.txt": "buy bread\n"}},
    ),
    DesktopTask(
        "editor-delete-line",
        "The text editor has settings.conf open. Delete the line obsolete=true, keep the other lines, "
        "and save the file.",
        file_is("settings.conf", "color=blue\nsize=12", app="editor"),
        apps=("editor:settings.conf",),
        app_files={"editor": {"settings.conf": "color=blue\nobsolete=true\nsize=12\n"}},
    ),
]
