"""Imported environments: names given to OpenEnv classes and servers, kept in a small JSON file.

``omnienv import openenv TARGET --name NAME`` writes ``NAME -> TARGET`` to ``imports.json`` in the
user's config directory (``$XDG_CONFIG_HOME/omnienv``, default ``~/.config/omnienv``), so every
command that takes an environment name (serve, check, rollout...) finds it, and ``omnienv list``
shows it. Targets are the importers' own names: ``openenv/<module>:<Class>`` or
``openenv+http://host:port``; they resolve without a registration too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from omnienv.core import EnvironmentBase, UnknownEnvironmentError

__all__ = ["add", "config_path", "imported", "is_import_target", "load_target", "remove", "resolves"]

FILE = "imports.json"


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
    found: dict[str, dict[str, Any]] = data.get("imports", {}) if isinstance(data, dict) else {}
    return found


def _write(imports: dict[str, dict[str, Any]]) -> None:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps({"imports": imports}, indent=2, sort_keys=True) + "\n")
    partial.replace(path)  # atomic: a reader never sees half a file


def add(name: str, source: str, target: str) -> None:
    """Register ``target`` (of importer ``source``) under ``name``, replacing any earlier one."""
    imports = imported()
    imports[name] = {"source": source, "target": target}
    _write(imports)


def remove(name: str) -> bool:
    """Forget ``name``; False when it was not registered."""
    imports = imported()
    if imports.pop(name, None) is None:
        return False
    _write(imports)
    return True


def is_import_target(name: str) -> bool:
    """Whether ``name`` is spelled as an importer's target (``openenv/m:C``, ``openenv+http://...``)."""
    from omnienv.catalog.openenv import is_openenv_name
    from omnienv.catalog.openenv_remote import is_openenv_url

    return is_openenv_name(name) or is_openenv_url(name)


def resolves(name: str) -> bool:
    """Whether ``name`` is an importer's target or a registered import."""
    return is_import_target(name) or name in imported()


def load_target(name: str) -> type[EnvironmentBase]:
    """The environment class for a target or a registered import's name."""
    target = name if is_import_target(name) else imported().get(name, {}).get("target", "")
    if target.startswith("openenv/"):
        from omnienv.catalog.openenv import environment

        return environment(target)
    if target.startswith("openenv+"):
        from omnienv.catalog.openenv_remote import environment as remote

        return remote(target)
    raise UnknownEnvironmentError(f"'{name}' is not an imported environment (see `omnienv list --source openenv`)")
