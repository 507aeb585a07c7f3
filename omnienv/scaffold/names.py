"""The names one environment goes by, derived from the one its author types.

``omnienv new count-letters`` needs a distribution and entry-point name (``count-letters``), an
importable package (``count_letters``) and a class (``CountLetters``). Checking them here, before
a single file is written, turns a package that would fail at import time into an error that says
which name to pick instead.
"""

from __future__ import annotations

import importlib.util
import keyword
import re
import sys
from dataclasses import dataclass

from omnienv import core
from omnienv.core import OmniEnvError

__all__ = ["ScaffoldError", "ScaffoldNames", "scaffold_names"]

MAX_LENGTH = 32
"""Long enough for a descriptive name; short enough that generated lines stay within 110 columns."""
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
_RESERVED = frozenset({"omnienv", "omnienv_verifiers", "test", "tests", "src", "setup", "conftest"})
_TEMPLATE_NAMES = frozenset(
    {
        "Any",
        "BytesIO",
        "Canvas",
        "ClassVar",
        "CodeGame",
        "Colour",
        "Episode",
        "Iterator",
        "Limits",
        "Mapping",
        "Path",
        "Problem",
        "RandomPolicy",
        "Run",
        "ScriptedPolicy",
    }
)
"""Names the generated modules define or import besides omnienv's own."""


class ScaffoldError(OmniEnvError, ValueError):
    """``omnienv new`` cannot write the package as asked; the message names the fix."""

    code = "SCAFFOLD_ERROR"


@dataclass(frozen=True, slots=True)
class ScaffoldNames:
    name: str
    """The environment's name: distribution, entry point and ``Environment.name``."""
    package: str
    class_name: str
    title: str


def scaffold_names(name: str, taken: frozenset[str] = frozenset()) -> ScaffoldNames:
    """The derived names for ``name``, or a ScaffoldError saying what to change.

    ``taken`` holds environment names already registered: a second ``wordle`` would be shadowed
    by (or shadow) the first one in ``omnienv check wordle``.
    """
    if len(name) > MAX_LENGTH:
        raise ScaffoldError(f"'{name}' is longer than {MAX_LENGTH} characters; pick a shorter name")
    if not _NAME.match(name):
        raise ScaffoldError(
            f"'{name}' is not a usable environment name: use lowercase letters and digits, words "
            "joined by single '-' or '_', starting with a letter (e.g. 'count-letters')"
        )
    package = name.replace("-", "_")
    if keyword.iskeyword(package) or keyword.issoftkeyword(package):
        raise ScaffoldError(f"'{name}' is a Python keyword; pick another name, e.g. '{name}-env'")
    if package in sys.stdlib_module_names or package in _RESERVED or _importable(package):
        raise ScaffoldError(
            f"a package named '{package}' would shadow the module of that name; pick another name, e.g. '{name}-env'"
        )
    if name in taken or package in taken:
        raise ScaffoldError(f"an environment named '{name}' already exists; pick another name")
    words = re.split(r"[-_]", name)
    class_name = "".join(word[:1].upper() + word[1:] for word in words)
    if class_name in core.__all__ or class_name in _TEMPLATE_NAMES:
        raise ScaffoldError(
            f"the class '{class_name}' would clash with a name the generated modules already use; "
            f"pick another name, e.g. '{name}-env'"
        )
    return ScaffoldNames(name, package, class_name, " ".join(word.capitalize() for word in words))


def _importable(package: str) -> bool:
    """Already importable as a module or regular package (a bare folder of that name is fine)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):  # a module already imported without a spec: taken all the same
        return True
    return spec is not None and spec.origin is not None
