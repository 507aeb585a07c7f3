"""Imported environments: names given to foreign environments, kept in a small JSON file.

``omnienv import openenv|ors|verifiers TARGET --name NAME`` writes ``NAME -> TARGET`` to
``imports.json`` in the user's config directory (``$XDG_CONFIG_HOME/omnienv``, default
``~/.config/omnienv``), so every command that takes an environment name (serve, check,
rollout...) finds it, and ``omnienv list`` shows it. Targets are the importers' own names:
``openenv/<module>:<Class>``, ``openenv+http://host:port``, ``ors+http://host:port[#env]`` or
``verifiers/<module>``; they resolve without a registration too. A record may also hold the
arguments the target is built with (a Verifiers module's ``load_environment`` arguments) and the
version the source had when it was imported.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from omnienv.core import EnvironmentBase, UnknownEnvironmentError, UsageError

__all__ = [
    "add",
    "check_name",
    "config_path",
    "imported",
    "is_import_target",
    "load_target",
    "remove",
    "resolves",
]

FILE = "imports.json"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
"""An import's name, spelled like the registry's (``wordle``, ``echo-game``, ``vf_tools``): it is
typed as ``omnienv play NAME``, shown in ``omnienv list``, and must not read as a path, a
``module:Class`` or an option."""


def config_path() -> Path:
    """Where the imports are kept: ``$XDG_CONFIG_HOME/omnienv/imports.json``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "omnienv" / FILE


def imported() -> dict[str, dict[str, Any]]:
    """Every registered import: name -> ``{"source": ..., "target": ...}``."""
    path = config_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UnknownEnvironmentError(f"cannot read {path}: {exc}; fix or delete it") from exc
    found = data.get("imports", {}) if isinstance(data, dict) else None
    if not isinstance(found, dict) or not all(_is_record(record) for record in found.values()):
        raise UnknownEnvironmentError(
            f'cannot read {path}: it must hold {{"imports": {{NAME: {{"source": ..., "target": ...}}}}}}; '
            "fix or delete it"
        )
    return found


def _is_record(record: Any) -> bool:
    """Whether ``record`` is an import as :func:`add` writes it: what every reader relies on."""
    return isinstance(record, dict) and isinstance(record.get("source"), str) and isinstance(record.get("target"), str)


def check_name(name: str) -> None:
    """Refuse a name no command could take (see :data:`NAME`)."""
    if not NAME.fullmatch(name):
        raise UsageError(
            f"'{name}' is not a usable name: use letters, digits, '-' and '_', starting with a letter "
            "or digit (e.g. 'echo-game')"
        )


def _write(imports: dict[str, dict[str, Any]]) -> None:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps({"imports": imports}, indent=2, sort_keys=True) + "\n")
    partial.replace(path)  # atomic: a reader never sees half a file


def add(name: str, source: str, target: str, **details: Any) -> None:
    """Register ``target`` (of importer ``source``) under ``name``, replacing any earlier one;
    ``details`` (``args``, ``version``) are kept with it."""
    check_name(name)
    imports = imported()
    imports[name] = {"source": source, "target": target, **{k: v for k, v in details.items() if v is not None}}
    _write(imports)


def remove(name: str) -> bool:
    """Forget ``name``; False when it was not registered."""
    imports = imported()
    if imports.pop(name, None) is None:
        return False
    _write(imports)
    return True


def is_import_target(name: str) -> bool:
    """Whether ``name`` is spelled as an importer's target (``openenv/m:C``, ``openenv+http://...``,
    ``ors+http://...``, ``verifiers/<module>``)."""
    from omnienv.catalog.openenv import is_openenv_name
    from omnienv.catalog.openenv_remote import is_openenv_url
    from omnienv.catalog.ors import is_ors_url
    from omnienv.catalog.verifiers import is_verifiers_name

    return is_openenv_name(name) or is_openenv_url(name) or is_ors_url(name) or is_verifiers_name(name)


def resolves(name: str) -> bool:
    """Whether ``name`` is an importer's target or a registered import."""
    return is_import_target(name) or name in imported()


def load_target(name: str) -> type[EnvironmentBase]:
    """The environment class for a target or a registered import's name."""
    record = {"target": name} if is_import_target(name) else imported().get(name, {})
    target = str(record.get("target", ""))
    if target.startswith("ors+"):
        from omnienv.catalog.ors import environment as ors

        return ors(target)
    if target.startswith("verifiers/"):
        from omnienv.catalog.verifiers import environment as verifiers

        return verifiers(target, json.dumps(record.get("args") or {}, sort_keys=True))
    if target.startswith("openenv/"):
        from omnienv.catalog.openenv import environment

        return environment(target)
    if target.startswith("openenv+"):
        from omnienv.catalog.openenv_remote import environment as remote

        return remote(target)
    raise UnknownEnvironmentError(f"'{name}' is not an imported environment (see the imported names in `omnienv list`)")
