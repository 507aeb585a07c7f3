"""Lines of a task's ``test.sh`` that let the agent's own files run inside its grader.

The verifier runs ``test.sh`` from the working directory, which holds what the agent left. Python
started there with ``-c``, ``-m`` or a program on its standard input puts that directory first on
``sys.path``, ahead of the standard library and of pytest: a ``json.py`` or ``pytest.py`` the agent
wrote is what the grader imports, and it can pass any check (``tests/envs/test_terminal.py`` plays
it). ``-I`` (isolated) or ``-P`` (no unsafe path) keeps the directory off the path; a script named
by its path (``python3 /tests/grade.py``) puts its own directory there instead, which is safe too.

The verifier also runs with the task's environment (its Dockerfile's ``ENV``, its ``[verifier]
env``): a search path there that leads into the working directory (``PYTHONPATH=/app``,
``PATH=/app/.venv/bin:...``) makes the agent's ``json.py`` or ``python3`` the grader's, even for
``python3 /tests/grade.py``.

Only the task's author can fix the line, so reading a task reports it rather than refusing it:
a test that deliberately imports the agent's code trusts that code whatever the flags.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping

__all__ = ["environment_hazards", "verifier_hazards"]

_PYTHON = re.compile(r"(?:^|[/=(`;&|])(python[0-9.]*)\)*$")
"""A word that runs Python: ``python3``, ``/usr/bin/python3.11``, ``$(python3``, ``x=$(python3``."""
_TAKES_VALUE = frozenset("WX")
"""Options whose value is the next word (``-W ignore``, ``-X dev``)."""


def verifier_hazards(script: str) -> list[str]:
    """One line of explanation for each line of ``script`` that starts Python with ``-c``, ``-m`` or
    a program on stdin from a directory the agent controls (without ``-I`` or ``-P``)."""
    found = []
    for number, line in enumerate(script.splitlines(), 1):
        for word in _unsafe_pythons(line):
            found.append(
                f"test.sh line {number} runs '{word}' from the working directory, where the agent's files "
                f"come first on sys.path (a json.py or pytest.py it wrote is what gets imported): "
                f"add -I, as in 'python3 -I {word.split()[-1]} ...' "
                "(or -P on Python 3.11+, which keeps PYTHONPATH)"
            )
    return found


_SEARCH_PATHS = {
    "PATH": "programs", "PYTHONPATH": "Python modules", "PYTHONHOME": "Python's standard library",
    "PYTHONUSERBASE": "Python's user site-packages", "LD_LIBRARY_PATH": "shared libraries",
    "LD_PRELOAD": "shared libraries", "BASH_ENV": "a script every bash runs",
    "HOME": "settings (~/.gitconfig, ~/.jq)", "XDG_CONFIG_HOME": "settings", "GIT_CONFIG_GLOBAL": "git settings",
    "PERL5LIB": "Perl modules", "RUBYLIB": "Ruby libraries", "NODE_PATH": "Node modules", "CLASSPATH": "Java classes",
}  # fmt: skip
"""Variables that make the verifier's programs load code or settings from where they name, and what."""
_BEFORE_TEST = frozenset({"BASH_ENV", "LD_PRELOAD", "LD_LIBRARY_PATH"})
"""Those read as test.sh starts, before its first line could reset them."""


def environment_hazards(env: Mapping[str, str], workdir: str) -> list[str]:
    """One line of explanation for each variable of ``env`` (the verifier's, from the task) that leads
    a program of the grader into ``workdir`` (where the agent's files are), or into the directory it
    runs in (an empty or relative entry)."""
    found = []
    for name, value in env.items():
        what = _SEARCH_PATHS.get(name)
        entries = value.split(":") if what is not None else []
        inside = [e for e in entries if not e.startswith("/") or _inside(posixpath.normpath(e), workdir)]
        if inside:
            fix = "export PATH=/usr/bin:/bin" if name == "PATH" else f"unset {name}"
            fix = "drop it" if name in _BEFORE_TEST else f"reset it first in test.sh ({fix})"
            found.append(
                f"ENV {name}={value} leads to {inside[0] or 'the working directory'}, where the agent's files are: "
                f"the verifier runs with it too, and takes its {what} from there; {fix}"
            )
    return found


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _unsafe_pythons(line: str) -> list[str]:
    try:
        words = shlex.split(line, comments=True)
    except ValueError:  # an unbalanced quote: a line of a longer command; its words still tell
        words = line.split("#", 1)[0].split()
    unsafe = []
    for index, word in enumerate(words):
        python = _PYTHON.search(word)
        if python is not None:
            piped = index > 0 and words[index - 1] == "|"
            mode = _mode(words[index + 1 :], piped)
            if mode is not None:
                unsafe.append(f"{python.group(1)} {mode}")
    return unsafe


def _mode(arguments: list[str], piped: bool) -> str | None:
    """``-c``, ``-m`` or ``-`` (stdin) when these arguments run code with the current directory
    first on the path; None for a script (its own directory goes first) or no program at all."""
    letters = ""
    skip = False
    for word in arguments:
        if skip:
            skip = False
            continue
        if word == "-" or word.startswith("<"):  # "python3 - <<EOF", "python3 <<EOF", "python3 < x.py"
            return None if "I" in letters or "P" in letters else "-"
        if word.startswith("--") or not word.startswith("-"):
            return None  # a script, a long option, or the word python in another command's arguments
        flags = word[1:]
        for position, letter in enumerate(flags):
            letters += letter
            if letter in "cm":
                return None if "I" in letters or "P" in letters else f"-{letter}"
            if letter in _TAKES_VALUE:
                skip = position == len(flags) - 1  # "-W ignore"; "-Wignore" carries its value
                break
    return "-" if piped and "I" not in letters and "P" not in letters else None  # "... | python3"
