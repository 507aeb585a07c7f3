"""``omnienv list``: the built-in environments and the catalog, as a table or as JSON.

Catalog rows come from the manifest (:mod:`omnienv.catalog`), so listing imports none of the
foreign libraries and shows environments whose library is not installed here too (loading one
then names the extra to install). Imported environments (``omnienv import``) are listed by name
and target, unloaded: their tools are read from the environment or server when one is loaded.
"""

from __future__ import annotations

import importlib.metadata
import json
from typing import Annotated, Any

import typer
from rich.table import Table

from omnienv import __version__
from omnienv.catalog import SOURCES, entries, imports
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


def imported_rows(source: str | None = None) -> list[dict[str, Any]]:
    """The names registered with ``omnienv import``, without loading them (a server may be down)."""
    rows = []
    for name, record in imports.imported().items():
        if source is not None and record.get("source") != source:
            continue
        version = record.get("version")
        if version is None:  # not recorded at import: the source's package here, if any
            try:
                version = importlib.metadata.version(str(record.get("source")))
            except importlib.metadata.PackageNotFoundError:
                version = "-"
        target = str(record.get("target", ""))
        remote = target.startswith(("openenv+", "ors+"))
        offline = not remote or "//127.0.0.1" in target or "//localhost" in target
        rows.append(
            {
                "name": name,
                "source": record.get("source", ""),
                "version": version,
                "kind": "imported",
                "description": target,
                "tools": [],
                "splits": {},
                "offline": offline,
            }
        )
    return rows


IMPORTERS = ("openenv", "ors", "verifiers")


def list_envs(
    source: Annotated[
        str | None, typer.Option(help=f"Only this source: omnienv, {', '.join((*SOURCES, *IMPORTERS))}")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list instead of a table")] = False,
) -> None:
    """List every environment omnienv can load: name, source and version, kind, tools, splits, offline."""
    if source is not None and source != "omnienv" and source not in SOURCES and source not in IMPORTERS:
        raise fail(f"no source '{source}'; sources: omnienv, {', '.join((*SOURCES, *IMPORTERS))}")
    rows = builtin_rows() if source in (None, "omnienv") else []
    rows += catalog_rows(source) if source not in ("omnienv", *IMPORTERS) else []
    try:
        rows += imported_rows(source) if source != "omnienv" else []
    except OmniEnvError as exc:
        raise fail(exc.message) from None
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
        if row["kind"] == "imported":
            tools = f"(read when loaded) {row['description']}"
        table.add_row(
            row["name"],
            f"{row['source']} {row['version']}",
            row["kind"],
            tools,
            splits,
            "yes" if row["offline"] else "no",
        )
    console.print(table)
