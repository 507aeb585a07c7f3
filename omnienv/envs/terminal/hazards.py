"""Lines of a task's ``test.sh`` that let the agent's own files run inside its grader.

The verifier runs ``test.sh`` from the working directory, which holds what the agent left. Python
started there with ``-c``, ``-m`` or a program on its standard input puts that directory first on
``sys.path``, ahead of the standard library and of pytest: a ``json.py`` or ``pytest.py`` the agent
wrote is what the grader imports, and it can pass any check (``tests/envs/test_terminal.py`` plays
it). ``-I`` (isolated) or ``-P`` (no unsafe path) keeps the directory off the path; a script named
by its path (``python3 /tests/grade.py``) puts its own directory there instead, which is safe too.

Only the task's author can fix the line, so reading a task reports it rather than refusing it:
a test that deliberately imports the agent's code trusts that code whatever the flags.
"""

from __future__ import annotations

import re
import shlex

__all__ = ["verifier_hazards"]

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
