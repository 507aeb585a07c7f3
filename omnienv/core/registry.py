"""Find environments by name: built-ins, ``omnienv.environments`` entry points, ``module:Class``,
or a catalog name (``reasoning-gym/leg_counting``, see :mod:`omnienv.catalog`).

Entries are import strings, loaded on first use, so listing environments never imports a heavy
one (a Jupyter or desktop environment pulls in its sandbox stack). The catalog sits above core,
so it is imported by name, only when a name is not found among the others.
"""

from __future__ import annotations

import difflib
import importlib
import os
from pathlib import Path
from types import ModuleType

from omnienv.core.env import EnvironmentBase
from omnienv.core.errors import InvalidTypeError, OmniEnvError, UnknownEnvironmentError, UsageError

__all__ = ["load_environment", "register", "registered", "require_environment_class"]

ENTRY_POINT_GROUP = "omnienv.environments"
_BUILTIN = {
    "echo": "omnienv.envs.echo:Echo",
    "doors": "omnienv.envs.doors:Doors",
    "wordle": "omnienv.envs.wordle:Wordle",
    "desktop": "omnienv.envs.desktop:Desktop",
    "jupyter": "omnienv.envs.jupyter:Jupyter",
    "terminal": "omnienv.envs.terminal:Terminal",
}
_registered: dict[str, str | type[EnvironmentBase]] = {}


def register(name: str, target: str | type[EnvironmentBase]) -> None:
    """Make ``target`` (a class, or ``"package.module:Class"``) loadable as ``name``."""
    _registered[name] = target


def registered() -> dict[str, str | type[EnvironmentBase]]:
    """Every known name, built-ins first, then entry points, then runtime registrations.

    A built-in's name always means the built-in: an installed package's entry point cannot take
    it over (``omnienv new`` refuses such names). Only :func:`register` can, at run time.
    """
    found: dict[str, str | type[EnvironmentBase]] = dict(_BUILTIN)
    for name, target in _entry_points().items():
        found.setdefault(name, target)
    found.update(_registered)
    return found


def _entry_points() -> dict[str, str]:
    # reading every installed distribution's entry points takes about 10 ms of `omnienv serve`'s
    # start-up; a built-in environment never needs them
    from importlib.metadata import entry_points

    return {point.name: point.value for point in entry_points(group=ENTRY_POINT_GROUP)}


def load_environment(name: str) -> type[EnvironmentBase]:
    """The environment class for a registered name, a catalog name, a ``module:Class`` path, or
    a Harbor task directory (or a folder of them)."""
    if isinstance(name, os.PathLike):  # a Harbor task directory as a Path
        name = os.fspath(name)
    if not isinstance(name, str):  # None or a number would fail deep in the catalog's lookup
        raise UsageError(
            f"load_environment takes a name such as 'wordle', 'package.module:Class' or a Harbor task "
            f"directory, got {type(name).__name__} {name!r}"
        )
    target = _registered.get(name) or _BUILTIN.get(name)  # a built-in never needs the entry points
    if target is None:
        known = registered()
        target = known.get(name)
    if target is None and os.path.isdir(name):
        return _harbor(name)
    if target is None and _catalog().is_catalog_name(name):
        found: type[EnvironmentBase] = _catalog().load(name)
        return found
    if target is None and "://" in name:  # importing "http" would say it has no attribute "//host"
        raise UnknownEnvironmentError(
            f"'{name}' is a server's URL, not an environment: connect to it with "
            "omnienv.client.WebSocketClient(url) or HTTPClient(url)"
        )
    if target is None and ":" in name:
        target = name
    if target is None:
        close = difflib.get_close_matches(name, list(known), n=1) or [_catalog().suggest(name)]
        hint = f" Did you mean '{close[0]}'?" if close[0] else ""
        raise UnknownEnvironmentError(
            f"no environment named '{name}'.{hint} Known: {', '.join(known)}, the catalog (`omnienv list`); "
            "or pass 'package.module:Class' or a Harbor task directory."
        )
    if isinstance(target, type):
        return target
    module_name, _, attribute = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise UnknownEnvironmentError(f"cannot load environment '{name}' from '{target}': {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, EnvironmentBase)):
        raise UnknownEnvironmentError(f"'{target}' is not an omnienv Environment class")
    return cls


def require_environment_class(value: object, owner: str) -> type[EnvironmentBase]:
    """``value`` if it is an Environment class, else the :class:`InvalidTypeError` of ``owner``
    (an entry point taking ``env_class``) naming the fix: a name is loaded, an instance has a class."""
    if isinstance(value, type) and issubclass(value, EnvironmentBase):
        return value
    if isinstance(value, str):
        fix = f"use omnienv.load_environment({value!r})"
    elif isinstance(value, EnvironmentBase):
        fix = f"pass its class, {type(value).__name__}, not an instance"
    else:
        fix = "pass an Environment subclass, or omnienv.load_environment(name) for a registered one"
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    raise InvalidTypeError(
        f"{owner}: env_class must be an Environment class, got {type(value).__name__} {shown}: {fix}"
    )


def _catalog() -> ModuleType:
    return importlib.import_module("omnienv.catalog.manifest")


def _harbor(path: str) -> type[EnvironmentBase]:
    terminal = importlib.import_module("omnienv.envs.terminal")
    try:
        cls: type[EnvironmentBase] = terminal.environment_for_path(Path(path).resolve())
    except OmniEnvError as exc:
        raise UnknownEnvironmentError(f"cannot load the Harbor tasks in '{path}': {exc.message}") from exc
    return cls
