"""``omnienv list``: the built-in environments and the catalog, as a table or as JSON.

Catalog rows come from the manifest (:mod:`omnienv.catalog`), so listing imports none of the
foreign libraries and shows environments whose library is not installed here too (loading one
then names the extra to install).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from omnienv import __version__
from omnienv.catalog import SOURCES, entries
from omnienv.cli.common import console, fail
from omnienv.core import OmniEnvError, load_environment, registered


def builtin_rows() -> list[dict[str, Any]]:
    """The registered (built-in, entry-point, runtime) environments, loaded to read their tools."""
    rows = []
    for name in registered():
        row: dict[str, Any] = {"name": name, "source": "omnienv", "version": __version__, "kind": "built-in"}
        try:
            cls = load_environment(name)
        except OmniEnvError as exc:
            rows.append({**row, "description": "", "tools": [], "splits": {}, "offline": True, "error": exc.message})
            continue
        splits = {split: len(cls.tasks(split)) for split in cls.splits}
        rows.append(
            {**row, "description": cls.description, "tools": list(cls.tools), "splits": splits, "offline": True}
        )
    return rows


def catalog_rows(source: str | None = None) -> list[dict[str, Any]]:
    """The catalog's environments, from the manifest alone."""
    return [entry.listing() for entry in entries(source)]


def list_envs(
    source: Annotated[str | None, typer.Option(help=f"Only this source: omnienv, {', '.join(SOURCES)}")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list instead of a table")] = False,
) -> None:
    """List every environment omnienv can load: name, source and version, kind, tools, splits, offline."""
    if source is not None and source != "omnienv" and source not in SOURCES:
        raise fail(f"no source '{source}'; sources: omnienv, {', '.join(SOURCES)}")
    rows = builtin_rows() if source in (None, "omnienv") else []
    rows += catalog_rows(source) if source != "omnienv" else []
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    table = Table(title=f"{len(rows)} environments")
    table.add_column("name", no_wrap=True)
    for column in ("source", "kind", "tools", "splits", "offline"):
        table.add_column(column)
    for row in rows:
        splits = ", ".join(f"{split} ({count})" for split, count in row["splits"].items()) or "-"
        tools = ", ".join(row["tools"]) or (f"[red]unavailable: {row['error']}[/]" if "error" in row else "-")
        table.add_row(
            row["name"],
            f"{row['source']} {row['version']}",
            row["kind"],
            tools,
            splits,
            "yes" if row["offline"] else "no",
        )
    console.print(table)
