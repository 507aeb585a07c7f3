"""The names route families give our sessions, in one registry.

ORS names a session by the id its client sends in ``X-Session-ID``, NeMo Gym by the id signed
into its cookie, the MCP SDK by its ``mcp-session-id``. Each family binds its name to one of the
manager's sessions here, with what it keeps for it (ORS's prompt, NeMo's rollout ledger, MCP's
first observation). A binding lives exactly as long as its session: the manager drops it when the
session closes, however it closes (deleted, reaped, server stopping), and remembers recently
ended names so a family can answer "gone" rather than "never existed".
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Generic, TypeVar

__all__ = ["Bindings"]

S = TypeVar("S")
ENDED_MEMORY = 4096
"""How many ended names are remembered per registry, for "gone" answers (ORS's 410)."""


class Bindings(Generic[S]):
    """``(family, name) -> (session, value)``; session ``S`` is identified by ``id(session)``."""

    def __init__(self) -> None:
        self._by_name: dict[tuple[str, str], tuple[S, Any]] = {}
        self._names_of: dict[int, list[tuple[str, str]]] = {}
        self._ended: OrderedDict[tuple[str, str], None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._by_name)

    def bind(self, family: str, name: str, session: S, value: Any = None) -> None:
        """Name ``session`` ``name`` in ``family``; a name already bound is refused."""
        slot = (family, name)
        if slot in self._by_name:
            raise KeyError(f"{family} name {name!r} is already bound")
        self._by_name[slot] = (session, value)
        self._names_of.setdefault(id(session), []).append(slot)
        self._ended.pop(slot, None)

    def get(self, family: str, name: str) -> tuple[S, Any] | None:
        """The session named ``name`` in ``family`` and its value, or None."""
        return self._by_name.get((family, name))

    def unbind(self, family: str, name: str) -> tuple[S, Any] | None:
        """Drop one name (its session stays open); returns what it was bound to."""
        slot = (family, name)
        found = self._by_name.pop(slot, None)
        if found is not None:
            names = self._names_of.get(id(found[0]), [])
            if slot in names:
                names.remove(slot)
            if not names:
                self._names_of.pop(id(found[0]), None)
            self._remember(slot)
        return found

    def drop_session(self, session: S) -> None:
        """Every name of ``session`` ends with it (called by the manager on close)."""
        for slot in self._names_of.pop(id(session), ()):
            if self._by_name.pop(slot, None) is not None:
                self._remember(slot)

    def named(self, family: str) -> list[tuple[str, S, Any]]:
        """Every ``(name, session, value)`` bound in ``family`` now."""
        return [(name, *bound) for (kind, name), bound in self._by_name.items() if kind == family]

    def ended(self, family: str, name: str) -> bool:
        """Whether ``name`` was bound in ``family`` and has ended recently."""
        return (family, name) in self._ended

    def _remember(self, slot: tuple[str, str]) -> None:
        self._ended[slot] = None
        while len(self._ended) > ENDED_MEMORY:
            self._ended.popitem(last=False)
