"""Pickling the contract's values as constructor calls.

A slotted dataclass pickles, by default, as an empty instance plus a dict of its slots by name,
built anew for each object (and by Python code, for a frozen one). The results of a batch of
steps cross processes as one pickle (Ray hosts, :mod:`omnienv.ray.host`), and as a call of the
class with its fields, in order, they pickle about three times faster, load twice as fast and
take a third less room.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, TypeVar

__all__ = ["pickled_as_constructor_call"]

T = TypeVar("T", bound=type)


def pickled_as_constructor_call(cls: T) -> T:
    """Make ``cls`` (a dataclass whose fields are all constructor arguments) pickle as
    ``cls(*fields)``. A subclass pickles as Python's default does, so that nothing it adds is lost."""
    names = [field.name for field in dataclasses.fields(cls)]
    if any(not field.init for field in dataclasses.fields(cls)):
        raise TypeError(f"{cls.__name__} has fields its constructor does not take")
    getter = operator.attrgetter(*names)
    single = len(names) == 1  # attrgetter gives the value itself, not a 1-tuple

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        if type(self) is not cls:
            return object.__reduce_ex__(self, protocol)
        values = getter(self)
        return cls, ((values,) if single else values)

    cls.__reduce_ex__ = __reduce_ex__  # type: ignore[assignment]
    return cls
