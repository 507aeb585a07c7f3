"""Run a script in a peer's virtualenv and read the JSON lines it prints."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.peerenv import ROOT


def run_json(python: Path, script: Path, timeout: float) -> list[dict[str, Any]]:
    """Every JSON-object line the script printed; fails with its output if it exits non-zero."""
    result = subprocess.run([str(python), str(script)], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def by_kind(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    found = [line for line in lines if line.get("kind") == kind]
    assert found, f"no '{kind}' line in the script's output: {lines}"
    return found
