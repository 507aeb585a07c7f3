"""docs/designing-environments.md: its Python runs as written, its commands exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from omnienv.cli.main import app
from omnienv.core import ToolCall
from omnienv.core.text_actions import parse_text_actions
from omnienv.envs.wordle import Wordle

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


def test_the_text_actions_example_declares_wordles_own_tools() -> None:
    """The guide's inline ``text_actions = {...}`` is a grammar for Wordle, as its sentence says."""
    declared = re.search(r"`text_actions = (\{.*?\})`", GUIDE.read_text(encoding="utf-8"))
    assert declared is not None
    grammar = ast.literal_eval(declared.group(1))
    namespace: dict[str, object] = {"Wordle": Wordle}
    exec(f"class TextWordle(Wordle):\n    text_actions = {grammar!r}\n", namespace)  # a class that names no tool fails
    calls = parse_text_actions("<guess>crane</guess>", Wordle.tools, grammar)
    assert calls == [ToolCall("guess", {"word": "crane"})]
