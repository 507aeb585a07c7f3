"""The built-in harnesses by name, and ``load_harness``: a built-in name, or a spec file's path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnienv.agents.harness import Harness
from omnienv.agents.minisweagent import MiniSweAgent
from omnienv.agents.spec import load_spec
from omnienv.core import UsageError

__all__ = ["BUILTIN", "load_harness"]

BUILTIN: dict[str, str] = {
    "mini-swe-agent": "mini-swe-agent 2.x (PyPI mini-swe-agent): one bash tool call per turn, its own mini.yaml",
}
"""Each built-in harness and what it is."""


def load_harness(harness: str, *, python: str | None = None, **options: Any) -> Harness:
    """``mini-swe-agent`` (``python``: the interpreter it is installed for), or a TOML spec's path.

    ``options`` go to the built-in harness (mini-swe-agent: ``config``, ``step_limit``)."""
    if harness == "mini-swe-agent":
        return MiniSweAgent(python, **options)
    path = Path(harness)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise UsageError(f"no harness spec file {path}")
        if python is not None or options:
            raise UsageError("--python and harness options are for built-in harnesses; a spec names its command")
        return load_spec(path)
    names = ", ".join(sorted(BUILTIN))
    raise UsageError(f"unknown harness '{harness}': a built-in one ({names}) or the path of a TOML spec file")
