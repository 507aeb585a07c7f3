"""The one table between wire error codes and exceptions, built from ``OmniEnvError.code``.

Servers turn an exception into ``{"message", "code"}``; clients turn that back into the same
class, so callers can ``except CapacityError`` whether the env runs in-process or remotely.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from omnienv.core.errors import EnvironmentFailure, OmniEnvError

__all__ = ["ERROR_TYPES", "error_data", "error_from_data", "register_code"]

# Codes OpenEnv servers send that have no class of their own here.
_FOREIGN = {"EXECUTION_ERROR": EnvironmentFailure, "FACTORY_ERROR": EnvironmentFailure}


def _walk(cls: type[OmniEnvError]) -> Iterator[type[OmniEnvError]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _walk(sub)


def _build() -> dict[str, type[OmniEnvError]]:
    table: dict[str, type[OmniEnvError]] = dict(_FOREIGN)
    for cls in _walk(OmniEnvError):
        code = cls.__dict__.get("code")
        if isinstance(code, str):
            table.setdefault(code, cls)  # the most general class that declares a code wins
    return table


_TABLE = _build()
ERROR_TYPES: Mapping[str, type[OmniEnvError]] = MappingProxyType(_TABLE)


def register_code(cls: type[OmniEnvError]) -> None:
    """Add an error class defined after import (a dialect's own) to the table."""
    _TABLE.setdefault(cls.code, cls)


def error_data(exc: OmniEnvError, **details: Any) -> dict[str, Any]:
    """The ``data`` of an error frame; ``details`` (or ``exc.details``) adds fields such as
    ``max_sessions``."""
    data: dict[str, Any] = {"message": exc.message, "code": exc.code}
    extra = getattr(exc, "details", None)
    if extra:
        data.update(extra)
    data.update(details)
    return data


def error_from_data(data: Mapping[str, Any]) -> OmniEnvError:
    """The exception an error frame stands for; unknown codes become a plain OmniEnvError."""
    code = str(data.get("code") or OmniEnvError.code)
    message = str(data.get("message") or "the server reported an error without a message")
    cls = _TABLE.get(code)
    if cls is None:
        exc = OmniEnvError(f"{message} (code: {code})")
    else:
        exc = cls(message)
    exc.details = {k: v for k, v in data.items() if k not in ("message", "code")}  # type: ignore[attr-defined]
    return exc
