"""Templates in, files out: ``string.Template`` with a delimiter (``%%``) that code rarely contains.

Templates live as package data under ``templates/``: ``common/`` for what every archetype shares,
one folder per archetype for the rest (a file there replaces the common one of the same path).
A path part ``__package__`` becomes the package's name, the ``.tmpl`` suffix is dropped, and
``*.part.tmpl`` files are fragments: ``notes.part.tmpl`` fills ``%%notes`` in the other templates.
Substitution is strict: a misspelt placeholder fails when rendering, never in a generated file.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath

__all__ = ["ARCHETYPES", "render_archetype", "template_root"]

ARCHETYPES: dict[str, str] = {
    "single-turn": "one question, one answer tool that ends the episode",
    "multi-turn-tools": "a game over several tool calls with state between them (Wordle-like)",
    "sandboxed-code": "the agent runs Python in a resource-limited subprocess and submits a solution",
    "vision": "image observations (PNG drawn with the standard library) and an answer tool",
}
COMMON = "common"
SUFFIX = ".tmpl"
PART = ".part" + SUFFIX
PACKAGE_PART = "__package__"


class PackageTemplate(string.Template):
    """``%%name`` or ``%%{name}``; ``%%%%`` writes a literal ``%%``."""

    delimiter = "%%"
    idpattern = r"[a-z][a-z0-9_]*"


def template_root() -> Traversable:
    return resources.files(__package__) / "templates"


def _walk(folder: Traversable, prefix: PurePosixPath | None = None) -> dict[PurePosixPath, Traversable]:
    found: dict[PurePosixPath, Traversable] = {}
    for entry in folder.iterdir():
        if entry.name == "__pycache__":
            continue
        path = prefix / entry.name if prefix is not None else PurePosixPath(entry.name)
        if entry.is_dir():
            found.update(_walk(entry, path))
        elif entry.name.endswith(SUFFIX):
            found[path] = entry
    return found


def render_archetype(archetype: str, variables: Mapping[str, str]) -> dict[PurePosixPath, str]:
    """Every file of ``archetype``'s package, relative path to text, ready to be written."""
    root = template_root()
    sources = {**_walk(root / COMMON), **_walk(root / archetype)}
    fragments = {
        path.name.removesuffix(PART): PackageTemplate(entry.read_text("utf-8")).substitute(variables)
        for path, entry in sources.items()
        if path.name.endswith(PART)
    }
    values = {**variables, **fragments}
    files: dict[PurePosixPath, str] = {}
    for path, entry in sorted(sources.items()):
        if path.name.endswith(PART):
            continue
        parts = [variables["package"] if part == PACKAGE_PART else part for part in path.parts]
        target = PurePosixPath(*parts)
        files[target.with_name(target.name.removesuffix(SUFFIX))] = PackageTemplate(
            entry.read_text("utf-8")
        ).substitute(values)
    return files
