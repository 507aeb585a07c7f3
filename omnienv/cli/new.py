"""``omnienv new NAME``: write a new environment package from an archetype."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from omnienv.cli.common import console, fail
from omnienv.scaffold import ARCHETYPES, ScaffoldError, create_environment

__all__ = ["new"]

_ARCHETYPE_HELP = "; ".join(f"{name}: {summary}" for name, summary in ARCHETYPES.items())


def new(
    name: Annotated[str, typer.Argument(help="Environment name, e.g. count-letters (also the package name)")],
    archetype: Annotated[str, typer.Option(help=f"What kind of environment. {_ARCHETYPE_HELP}")] = "multi-turn-tools",
    directory: Annotated[
        Path | None, typer.Option("--dir", help="Folder to create NAME/ in (default: the current folder)")
    ] = None,
) -> None:
    """Create an environment package that passes `make test` as generated."""
    try:
        created = create_environment(name, archetype, directory)
    except ScaffoldError as exc:
        raise fail(exc.message) from None
    where = os.path.relpath(created.root)
    where = where if not where.startswith("..") else str(created.root)
    console.print(f"created [bold]{created.names.name}[/] ({archetype}) in {where}: {len(created.files)} files")
    console.print(f"  cd {where}")
    console.print("  make test        # the package's tests, then the contract checks")
    console.print("  make play        # play it yourself, one tool call per line")
    console.print(f"  make install     # pip install -e; then `omnienv check {created.names.name}` works")
