"""The catalog's index: ``manifest.json``, read without importing any foreign library.

``omnienv list`` must answer in well under a second and must work where a source's library is not
installed, so what each environment is (source, version, kind, tools, splits, offline) is written
down once by ``scripts/catalog_manifest.py`` inside that library's own virtualenv, and read from
here. The tests compare this file with the live library in that virtualenv, so it cannot go stale
silently. Loading an environment (:func:`load`) is the only step that imports its library.
"""

from __future__ import annotations

import difflib
import importlib
import json
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from omnienv.core import EnvironmentBase, UnknownEnvironmentError

__all__ = ["SOURCES", "CatalogEntry", "MissingLibraryError", "Source", "entries", "find", "load", "suggest"]

MANIFEST = "manifest.json"


@dataclass(frozen=True, slots=True)
class Source:
    """Where catalog environments come from: the library, the module it imports as, the extra."""

    name: str
    library: str
    module: str
    extra: str | None
    loader: str

    @property
    def install_hint(self) -> str:
        if self.extra is None:
            return f"pip install '{self.library}'"
        return f"install the {self.extra} extra: pip install 'omnienv[{self.extra}]'"


SOURCES: dict[str, Source] = {
    source.name: source
    for source in (
        Source("reasoning-gym", "reasoning-gym", "reasoning_gym", "reasoning-gym", "omnienv.catalog.reasoning_gym"),
        Source("gymnasium", "gymnasium", "gymnasium", "gymnasium", "omnienv.catalog.gymnasium_text"),
        Source("gem", "gem-llm", "gem", "gem", "omnienv.catalog.gem"),
        Source("textarena", "textarena", "textarena", "textarena", "omnienv.catalog.textarena"),
    )
}


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One loadable environment, as ``omnienv list`` shows it.

    ``target`` is the source's own id (a dataset name, a Gymnasium or GEM id); ``splits`` maps
    each split to its task count; ``max_turns`` is the contract's turn limit for it.
    """

    name: str
    source: str
    target: str
    kind: str
    description: str
    tools: tuple[str, ...]
    splits: dict[str, int] = field(default_factory=dict)
    offline: bool = True
    max_turns: int | None = None

    @property
    def version(self) -> str:
        return str(_manifest()["sources"][self.source]["version"])

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tools"] = list(self.tools)
        return data

    def listing(self) -> dict[str, Any]:
        """The row ``omnienv list --json`` prints."""
        return {
            "name": self.name,
            "source": self.source,
            "version": self.version,
            "kind": self.kind,
            "description": self.description,
            "tools": list(self.tools),
            "splits": dict(self.splits),
            "offline": self.offline,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CatalogEntry:
        return cls(**{**data, "tools": tuple(data["tools"]), "splits": dict(data["splits"])})


class MissingLibraryError(UnknownEnvironmentError):
    """The environment's source library is not installed here; the message names the extra."""

    def __init__(self, name: str, source: Source, cause: BaseException | None = None) -> None:
        why = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        super().__init__(
            f"'{name}' comes from {source.library}, which is not installed in this Python{why}: {source.install_hint}"
        )
        self.source = source


@cache
def _manifest() -> dict[str, Any]:
    text = (resources.files(__package__) / MANIFEST).read_text()
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def _by_name() -> dict[str, CatalogEntry]:
    return {row["name"]: CatalogEntry.from_dict(row) for row in _manifest()["environments"]}


def entries(source: str | None = None) -> list[CatalogEntry]:
    """Every catalog environment (of one source), in the manifest's order."""
    return [entry for entry in _by_name().values() if source is None or entry.source == source]


def stored_section(source: str) -> dict[str, Any]:
    """The manifest's account of one source: version, excluded ids (with why), environments."""
    section = dict(_manifest()["sources"].get(source, {}))
    section["environments"] = [entry.to_dict() for entry in entries(source)]
    return section


def suggest(name: str) -> str | None:
    """The catalog name closest to ``name``, for a did-you-mean."""
    close = difflib.get_close_matches(name, list(_by_name()), n=1, cutoff=0.6)
    return close[0] if close else None


def find(name: str) -> CatalogEntry:
    """The entry named ``name``; an unknown name gets the closest one in the error."""
    entry = _by_name().get(name)
    if entry is None:
        close = suggest(name)
        hint = f" Did you mean '{close}'?" if close else ""
        raise UnknownEnvironmentError(f"no catalog environment named '{name}'.{hint} See `omnienv list`.")
    return entry


def is_catalog_name(name: str) -> bool:
    """Whether ``name`` is spelled as a catalog name (``source/...``), known or not, or names an
    imported environment (an OpenEnv class or server, see :mod:`omnienv.catalog.imports`)."""
    return (name.split("/", 1)[0] in SOURCES and "/" in name) or _imports().resolves(name)


def _imports() -> Any:
    return importlib.import_module("omnienv.catalog.imports")


@cache
def load(name: str) -> type[EnvironmentBase]:
    """The environment class for catalog name ``name``, importing its library now.

    One class per name (cached), so its task index is read once, whichever server or dialect
    asks for it. Imported environments are made by their importer.
    """
    imports = _imports()
    if imports.resolves(name):
        found: type[EnvironmentBase] = imports.load_target(name)
        return found
    entry = find(name)
    source = SOURCES[entry.source]
    try:
        importlib.import_module(source.module)
    except ImportError as exc:
        raise MissingLibraryError(name, source, exc) from exc
    module = importlib.import_module(source.loader)
    cls: type[EnvironmentBase] = module.environment(entry)
    return cls
