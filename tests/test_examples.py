"""Examples are documentation: each must run as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_guess_the_number_runs() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "guess_the_number.py")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "contract checks passed" in result.stdout
    assert "episode reward 0.50" in result.stdout
