"""File manager tasks: folders and files PCManFM changed in its own home.

PCManFM runs with a home of its own, which no shell of the session mounts, so ``mv`` in a
terminal changes nothing there. Its terminal is switched off and the system's app launchers are
hidden from it, so its menus offer no shell either; only "open with a custom command", or a
terminal set back in its preferences, can still start one, each more steps than the task itself.
"""

from __future__ import annotations

from omnienv.envs.desktop.checks import DesktopTask, all_of, file_is, file_missing, is_directory, trashed

__all__ = ["TEST", "TRAIN"]

HOME_FILES = {
    "Archive/2023-taxes.txt": "filed\n",
    "Backup/.keep": "",
    "invoice.pdf": "%PDF-1.4 invoice 118\n",
    "notes.txt": "water the plants\n",
    "old.txt": "old notes\n",
    "report-draft.txt": "quarterly numbers\n",
}
FILES = ("files",)
SEEDED = {"files": HOME_FILES}


TRAIN = [
    DesktopTask(
        "files-new-folder",
        "Using the file manager, create a folder named Photos in your home folder.",
        is_directory("Photos", app="files"),
        apps=FILES,
        app_files=SEEDED,
    ),
    DesktopTask(
        "files-rename",
        "Using the file manager, rename report-draft.txt to report-final.txt.",
        all_of(file_is("report-final.txt", "quarterly numbers", "files"), file_missing("report-draft.txt", "files")),
        apps=FILES,
        app_files=SEEDED,
    ),
    DesktopTask(
        "files-trash",
        "Using the file manager, move old.txt to the trash.",
        trashed("old.txt", "old notes", "files"),
        apps=FILES,
        app_files=SEEDED,
    ),
]

TEST = [
    DesktopTask(
        "files-move",
        "Using the file manager, move invoice.pdf into the Archive folder.",
        all_of(file_is("Archive/invoice.pdf", "%PDF-1.4 invoice 118", "files"), file_missing("invoice.pdf", "files")),
        apps=FILES,
        app_files=SEEDED,
    ),
    DesktopTask(
        "files-copy",
        "Using the file manager, copy notes.txt into the Backup folder, keeping the original where it is.",
        all_of(
            file_is("Backup/notes.txt", "water the plants", "files"), file_is("notes.txt", "water the plants", "files")
        ),
        apps=FILES,
        app_files=SEEDED,
    ),
]
