"""docs/designing-environments.md: its Python runs as written, its commands exist."""

from __future__ import annotations

import re
from pathlib import Path

from omnienv.cli.main import app

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "designing-environments.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.DOTALL)


def test_every_python_block_runs_in_order() -> None:
    code = blocks("python")
    assert len(code) >= 6
    namespace: dict[str, object] = {"__name__": "designing_environments"}
    for number, block in enumerate(code, 1):
        exec(compile(block, f"{GUIDE.name}, python block {number}", "exec"), namespace)
    assert "SortBySwaps" in namespace


def test_every_command_exists() -> None:
    commands = {command.name or command.callback.__name__ for command in app.registered_commands}
    used = {word for block in blocks("bash") for word in re.findall(r"(?:^|\s)omnienv ([a-z]+)", block)}
    assert used and used <= commands, used - commands
