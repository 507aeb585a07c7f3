"""Training through omnienv learns: TRL's GRPOTrainer lifts a tiny model from chance on Doors.

``examples/train_demo.py`` builds a tiny model on the spot, teaches it only the format of the two
tool calls (every door after every clue, equally often), then trains it with GRPO twice from the
same start: with Doors in the training process, and against a real ``omnienv serve doors``. This
test reads the JSON lines each run wrote and asserts that the reward rose from chance (one door
in four) to near the optimum (1), in both runs. Seeds are fixed; the thresholds leave room for the
different trajectories other CPUs take.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from tests.peerenv import ROOT, peer_python

DEMO = ROOT / "examples" / "train_demo.py"
STEPS = 50
WINDOW = 5
CHANCE = 0.25
NEAR_OPTIMUM = 0.8
RUN_TIMEOUT_S = 900.0


def _steps(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_grpo_learns_doors_in_process_and_served(tmp_path: Path) -> None:
    python = peer_python("trl")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = str(ROOT)
    command = [str(python), str(DEMO), "--steps", str(STEPS), "--window", str(WINDOW), "--output-dir", str(tmp_path)]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"

    curves = {}
    for run in ("in-process", "served"):
        steps = _steps(tmp_path / f"{run}.jsonl")
        curves[run] = [s["reward"] for s in steps]
        assert [s["kind"] for s in steps] == ["train_step"] * STEPS
        assert [s["step"] for s in steps] == list(range(1, STEPS + 1))
        assert all(s["reward"] == s["rewards/Doors/mean"] for s in steps)  # nothing failed, nothing masked
        assert all(s["tools/call_frequency"] > 0 and s["tools/failure_frequency"] == 0 for s in steps)
        first = _mean([s["reward"] for s in steps[:WINDOW]])
        last = _mean([s["reward"] for s in steps[-WINDOW:]])
        assert first < 0.4, f"{run}: the warm-up taught the answer, not just the format ({first:.2f} at the start)"
        assert last - first >= 0.4, f"{run}: the reward did not rise: {first:.2f} -> {last:.2f}"
        assert last >= NEAR_OPTIMUM, f"{run}: {last:.2f} at the end is short of the optimum (1; chance {CHANCE})"
        assert f"RESULT {run}: mean reward {first:.3f} over the first {WINDOW} steps, {last:.3f} over the last" in (
            proc.stdout
        )

    # The same seeds give the same episodes in-process and served: the same curve, step for step.
    assert curves["in-process"] == curves["served"], curves
    assert (tmp_path / "reward.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    server = re.search(r"served by omnienv serve \(pid (\d+)\)", proc.stdout)
    assert server, proc.stdout[-2000:]
    assert not Path(f"/proc/{server.group(1)}").exists(), "the demo left its omnienv server running"
