"""The catalog: environments of other libraries as omnienv environments, by namespaced name.

``reasoning-gym/leg_counting``, ``gymnasium/FrozenLake-v1``, ``gem/game:Sudoku-v0-easy``: each is
an ordinary omnienv environment class, made on first load by its source's module
(:mod:`omnienv.catalog.reasoning_gym`, :mod:`~omnienv.catalog.gymnasium_text`,
:mod:`~omnienv.catalog.gem`, :mod:`~omnienv.catalog.textarena`), so every transport and dialect
serves it unchanged. What the catalog holds is read from ``manifest.json`` without importing any
of those libraries.

OpenEnv environments load by what they are, not from the manifest: ``openenv/<module>:<Class>``
(:mod:`~omnienv.catalog.openenv`, in-process) or ``openenv+http://host:port``
(:mod:`~omnienv.catalog.openenv_remote`, a server over its ``/ws``), or by a name given with
``omnienv import`` (:mod:`~omnienv.catalog.imports`).
"""

from omnienv.catalog.manifest import SOURCES, CatalogEntry, MissingLibraryError, Source, entries, find, load, suggest

__all__ = ["SOURCES", "CatalogEntry", "MissingLibraryError", "Source", "entries", "find", "load", "suggest"]
