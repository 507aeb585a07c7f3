"""Generated packages for the scaffold tests, and a way to import one without installing it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from omnienv.scaffold import CreatedEnvironment, create_environment

__all__ = ["generated", "importable"]


@pytest.fixture
def generated(tmp_path: Path) -> Callable[[str, str], CreatedEnvironment]:
    """``generated(name, archetype)`` writes a package under a fresh temporary folder."""

    def make(name: str, archetype: str) -> CreatedEnvironment:
        return create_environment(name, archetype, tmp_path)

    return make


@pytest.fixture
def importable(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[CreatedEnvironment], None]]:
    """Put a generated package on ``sys.path``; its modules are forgotten again afterwards."""
    packages: list[str] = []

    def add(created: CreatedEnvironment) -> None:
        monkeypatch.syspath_prepend(str(created.root))
        packages.append(created.names.package)

    yield add
    for name in list(sys.modules):
        if any(name == package or name.startswith(f"{package}.") for package in packages):
            del sys.modules[name]
