"""The generator ``setup`` draws from, seeded only when it is first drawn from.

Seeding a Mersenne Twister costs about 4 µs, most of a fast environment's reset, and most setups
never draw (the task already says everything). :func:`seeded` returns a ``random.Random`` that
takes its seed at the first draw and from then on *is* a plain ``random.Random``: the same numbers
``random.Random(seed)`` gives, at the same speed.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["seeded"]


class _SeededOnFirstDraw(random.Random):
    """Every entry point that reads or sets the state seeds first, then becomes ``random.Random``.

    The other methods (``choice``, ``shuffle``, ``gauss``...) all draw through ``random`` or
    ``getrandbits``, so they need no override. A bound method taken before the first draw (as
    ``_randbelow`` takes ``getrandbits``) keeps working after it.
    """

    _pending: Any

    def __init__(self, seed: Any = None) -> None:  # no super().__init__: that is the seeding put off
        self._pending = seed
        self.gauss_next = None  # read by gauss() before it draws

    def random(self) -> float:
        return random.Random.random(_plain(self))

    def getrandbits(self, k: int, /) -> int:
        return random.Random.getrandbits(_plain(self), k)

    def randbytes(self, n: int) -> bytes:
        return random.Random.randbytes(_plain(self), n)

    def getstate(self) -> Any:
        return random.Random.getstate(_plain(self))

    def setstate(self, state: Any) -> None:
        random.Random.setstate(_plain(self), state)

    def seed(self, a: Any = None, version: int = 2) -> None:
        random.Random.seed(_plain(self), a, version)


def _plain(rng: random.Random) -> random.Random:
    """Seed ``rng`` if it has not been yet, and make it a plain ``random.Random`` (same layout)."""
    if type(rng) is _SeededOnFirstDraw:
        seed = rng.__dict__.pop("_pending")
        rng.__class__ = random.Random  # type: ignore[assignment]  # the same layout: nothing is added
        random.Random.__init__(rng, seed)
    return rng


def seeded(seed: int | None) -> random.Random:
    """``random.Random(seed)``, paid for only when drawn from."""
    return _SeededOnFirstDraw(seed)
