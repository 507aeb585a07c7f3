"""The catalog tests use the server tests' fixtures: real servers on free ports of 127.0.0.1.

Each test gets a fresh config directory, so names a developer registered with ``omnienv import``
(``~/.config/omnienv/imports.json``) never reach them.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.conftest import serve

__all__ = ["serve"]


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    yield tmp_path / "config"
