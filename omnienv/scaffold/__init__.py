"""``create_environment``: write a new environment package that passes its own tests as generated.

A new environment starts from a working one rather than a blank page: tasks, tools, a rubric, a
scripted policy that solves it, tests, a Makefile and a README, shaped by one of four archetypes.
The author then changes the domain and keeps ``make test`` green, instead of assembling the
contract from the docs. The package declares an ``omnienv.environments`` entry point, so once it
is installed ``omnienv check NAME`` (and every other command) finds it by name.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from omnienv.core import registered
from omnienv.scaffold.names import ScaffoldError, ScaffoldNames, scaffold_names
from omnienv.scaffold.render import ARCHETYPES, render_archetype

__all__ = ["ARCHETYPES", "CreatedEnvironment", "ScaffoldError", "ScaffoldNames", "create_environment"]

DEFAULT_ARCHETYPE = "multi-turn-tools"


@dataclass(frozen=True, slots=True)
class CreatedEnvironment:
    """Where the package went and how to reach its environment."""

    root: Path
    names: ScaffoldNames
    archetype: str
    files: tuple[Path, ...]

    @property
    def target(self) -> str:
        """``package.env:Class``: loadable by omnienv before the package is installed."""
        return f"{self.names.package}.env:{self.names.class_name}"


def create_environment(
    name: str, archetype: str = DEFAULT_ARCHETYPE, directory: str | os.PathLike[str] | None = None
) -> CreatedEnvironment:
    """Write the package for environment ``name`` into ``directory/name`` (default: ``./name``).

    Raises ScaffoldError, before writing anything, for an unknown archetype, an unusable or taken
    name, or a target folder that already has files in it.
    """
    if archetype not in ARCHETYPES:
        close = difflib.get_close_matches(archetype, list(ARCHETYPES), n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise ScaffoldError(f"no archetype '{archetype}'.{hint} Choices: {', '.join(ARCHETYPES)}.")
    names = scaffold_names(name, frozenset(registered()))
    root = Path(directory if directory is not None else ".").expanduser().resolve() / name
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(f"{root} already exists and is not empty: remove it or pass another --dir")
    files = render_archetype(archetype, _variables(names, archetype))
    written = []
    for relative, text in files.items():
        path = root.joinpath(*relative.parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise ScaffoldError(f"cannot write {path}: {exc.strerror or exc}; pick a writable --dir") from exc
        written.append(path)
    return CreatedEnvironment(root, names, archetype, tuple(written))


def _variables(names: ScaffoldNames, archetype: str) -> dict[str, str]:
    from omnienv import __version__

    major, minor = [*__version__.split("."), "0", "0"][:2]
    return {
        "name": names.name,
        "package": names.package,
        "class_name": names.class_name,
        "title": names.title,
        "archetype": archetype,
        "archetype_summary": ARCHETYPES[archetype],
        "omnienv_requirement": f"omnienv>={major}.{minor}",
        "init_all": json.dumps(sorted([names.class_name, "ScriptedPolicy"])),
    }
