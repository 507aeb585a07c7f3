"""The catalog: environments of other libraries as omnienv environments, by namespaced name.

``reasoning-gym/leg_counting``, ``gymnasium/FrozenLake-v1``, ``gem/game:Sudoku-v0-easy``: each is
an ordinary omnienv environment class, made on first load by its source's module
(:mod:`omnienv.catalog.reasoning_gym`, :mod:`~omnienv.catalog.gymnasium_text`,
:mod:`~omnienv.catalog.gem`, :mod:`~omnienv.catalog.textarena`), so every transport and dialect
serves it unchanged. What the catalog holds is read from ``manifest.json`` without importing any
of those libraries.

Imported environments load by what they are, not from the manifest: an OpenEnv class
``openenv/<module>:<Class>`` (:mod:`~omnienv.catalog.openenv`, in-process) or server
``openenv+http://host:port`` (:mod:`~omnienv.catalog.openenv_remote`, over its ``/ws``), an ORS
server ``ors+http://host:port`` (:mod:`~omnienv.catalog.ors`), a Verifiers environment module
``verifiers/<module>`` (:mod:`~omnienv.catalog.verifiers`, classic or v1), or a name given to
any of them with ``omnienv import`` (:mod:`~omnienv.catalog.imports`).
"""

from omnienv.catalog.manifest import SOURCES, CatalogEntry, MissingLibraryError, Source, entries, find, load, suggest

__all__ = ["SOURCES", "CatalogEntry", "MissingLibraryError", "Source", "entries", "find", "load", "suggest"]
