"""Writing and checking ``manifest.json`` against the live libraries.

Run inside a source library's virtualenv (``scripts/catalog_manifest.py``). Each source module
offers ``version()``, ``candidates()`` (every environment the library registers, described
without starting one), optionally ``skipped()`` (ids left out by rule, with why) and ``probe(entry)``
(start one, offline; raises when it can't). Writing probes every candidate; checking does not
(it must be fast enough for the test suite): it compares the version, the set of ids, and each
stored description with the live library's.
"""

from __future__ import annotations

import importlib
import json
import re
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

from omnienv.catalog.manifest import MANIFEST, SOURCES, CatalogEntry, stored_section

__all__ = ["available_sources", "check_source", "live_section", "manifest_path", "write_sections"]


def manifest_path() -> Path:
    return Path(str(resources.files("omnienv.catalog") / MANIFEST))


def _loader(source: str) -> ModuleType:
    return importlib.import_module(SOURCES[source].loader)


def available_sources() -> dict[str, str | None]:
    """Each source, with None when its library imports here, else why not."""
    found: dict[str, str | None] = {}
    for name, source in SOURCES.items():
        try:
            importlib.import_module(source.module)
            found[name] = None
        except Exception as exc:
            found[name] = f"{source.library} is not importable here ({type(exc).__name__}): {source.install_hint}"
    return found


def _reason(exc: BaseException) -> str:
    """A short, stable reason: the root exception's type and its first line of text."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [line.strip(" *") for line in text.splitlines() if line.strip(" *")]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:160].rstrip(": ")


def live_section(source: str, *, probe: bool = True, log: Any = None) -> dict[str, Any]:
    """The manifest section of ``source`` from the live library: probe each candidate when
    ``probe``, and leave out (with the reason) those that cannot start offline."""
    module = _loader(source)
    skipped = getattr(module, "skipped", dict)
    excluded: dict[str, str] = dict(skipped())
    kept: list[CatalogEntry] = []
    for entry in module.candidates():
        if probe:
            try:
                module.probe(entry)
            except Exception as exc:
                excluded[entry.target] = _reason(exc)
                if log is not None:
                    log(f"  left out {entry.name}: {excluded[entry.target]}")
                continue
        kept.append(entry)
    return {
        "library": SOURCES[source].library,
        "version": module.version(),
        "excluded": dict(sorted(excluded.items())),
        "environments": [entry.to_dict() for entry in kept],
    }


def check_source(source: str) -> list[str]:
    """What differs between the stored section of ``source`` and the live library (no probes)."""
    stored = stored_section(source)
    if not stored.get("version"):
        return [f"the manifest has no '{source}' section: run scripts/catalog_manifest.py --source {source}"]
    live = live_section(source, probe=False)
    problems = []
    if stored["version"] != live["version"]:
        problems.append(f"{source}: manifest built with {stored['version']}, installed {live['version']}")
    live_entries = {row["target"]: row for row in live["environments"]}
    known = {row["target"] for row in stored["environments"]} | set(stored.get("excluded", {}))
    for target in sorted((set(live_entries) | set(live["excluded"])) - known):
        problems.append(f"{source}: '{target}' is in the library but neither listed nor excluded")
    for target in sorted(known - set(live_entries) - set(live["excluded"])):
        problems.append(f"{source}: '{target}' is in the manifest but no longer in the library")
    for row in stored["environments"]:
        if row["target"] in live_entries and live_entries[row["target"]] != row:
            problems.append(f"{source}: '{row['name']}' differs: stored {row}, live {live_entries[row['target']]}")
    return problems


def write_sections(sections: dict[str, dict[str, Any]], path: Path | None = None) -> Path:
    """Replace the given sources' sections in the manifest, keeping the others as they are."""
    path = path or manifest_path()
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"format": 1, "sources": {}}
    rows = [row for row in data.get("environments", []) if row["source"] not in sections]
    for source, section in sections.items():
        data["sources"][source] = {k: v for k, v in section.items() if k != "environments"}
        rows += section["environments"]
    order = list(SOURCES)
    rows.sort(key=lambda row: (order.index(row["source"]), row["name"]))
    data["sources"] = {name: data["sources"][name] for name in order if name in data["sources"]}
    data["environments"] = rows
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path
