"""Terminal tasks: files of the session's home, made with a shell.

The shell is the tool here, so ``run_command`` is as good a way as the terminal's window; the
checks read the result (never through a symlink), and the answer is never in the prompt.
"""

from __future__ import annotations

from omnienv.envs.desktop.checks import DesktopTask, all_of, file_is, file_missing, is_directory, selected_in

__all__ = ["TEST", "TRAIN"]

WORDS = "".join(
    f"{word}\n"
    for word in "apple banana cherry date elder fig grape honeydew kiwi lemon mango nectarine olive papaya "
    "quince raspberry strawberry".split()
)

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
        "terminal-select",
        "In the terminal, print the word selectme42 (for example with echo), then select that word "
        "on the screen with the mouse, so that it could be pasted elsewhere.",
        selected_in("terminal", "selectme42"),
    ),
    DesktopTask(
        "count-lines",
        "Count the lines of words.txt in your home directory and write the number (digits only) into count.txt there.",
        file_is("count.txt", str(WORDS.count("\n"))),
        files={"words.txt": WORDS},
        answer=str(WORDS.count("\n")),
    ),
    DesktopTask(
        "delete-logs",
        "Delete every file whose name ends in .log from the logs folder of your home directory; keep everything else.",
        all_of(
            file_missing("logs/app.log"),
            file_missing("logs/db.log"),
            file_missing("logs/web.log"),
            file_is("logs/readme.txt", "keep me"),
            file_is("logs/catalog.txt", "not a log"),
        ),
        files={
            "logs/app.log": "started\n",
            "logs/db.log": "connected\n",
            "logs/web.log": "GET /\n",
            "logs/readme.txt": "keep me\n",
            "logs/catalog.txt": "not a log\n",
        },
    ),
    DesktopTask(
        "backup-file",
        "Make a copy of config.ini (in your home directory) named config.ini.bak next to it, keeping the original.",
        all_of(file_is("config.ini.bak", "[server]\nport=8080"), file_is("config.ini", "[server]\nport=8080")),
        files={"config.ini": "[server]\nport=8080\n"},
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
        "sort-names",
        "Write the lines of names.txt (in your home directory) sorted alphabetically into a new file sorted.txt.",
        file_is("sorted.txt", "alice\nbob\ncarol\nmallory\ntrent"),
        files={"names.txt": "mallory\nalice\ntrent\nbob\ncarol\n"},
    ),
    DesktopTask(
        "find-word",
        "One of the files in the notes folder of your home directory mentions pineapple. Write that "
        "file's name (just the name, like monday.txt) into found.txt in your home directory.",
        file_is("found.txt", "tuesday.txt"),
        files={
            "notes/monday.txt": "buy apples\n",
            "notes/tuesday.txt": "order pineapple pizza\n",
            "notes/wednesday.txt": "call the bank\n",
        },
        answer="tuesday.txt",
    ),
]
