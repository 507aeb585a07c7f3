"""Inspect AI plays the wrapped Wordle offline with its mockllm model, in its own virtualenv."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.peerenv import PEERS, peer_python


def test_inspect_wins_wordle_samples(tmp_path: Path) -> None:
    python = peer_python("inspect")
    result = subprocess.run(
        [str(python), str(PEERS / "inspect" / "play_wordle.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rewards = [float(r) for r in re.findall(r"^sample \S+ reward (\S+)$", result.stdout, re.M)]
    assert len(rewards) == 3 and all(r > 1.0 for r in rewards), result.stdout
