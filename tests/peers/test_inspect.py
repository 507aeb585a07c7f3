"""Inspect AI plays omnienv's environments in its own virtualenv, through its own entry points.

Wordle: ``eval()`` with Inspect's mockllm model. Jupyter and the desktop: the ``inspect eval``
command line loads the tasks of ``examples/inspect_tasks.py`` by name and runs them with Inspect's
own tool loop against a scripted model behind a real OpenAI-compatible endpoint (Inspect's
``openai-api`` provider), and the log it writes holds the episode's reward.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.matrix.cells import CELLS
from tests.matrix.model import model_view, scripted_model
from tests.matrix.reference import reference
from tests.peerenv import PEERS, ROOT, peer_python

CLI_TIMEOUT_S = 300


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
    errors = re.findall(r"^sample \S+ tool errors (.*)$", result.stdout, re.M)
    assert errors[0] == "[\"'qqqqq' is not in the word list; this guess did not use an attempt.\"]", result.stdout
    assert errors[1:] == ["[]", "[]"], result.stdout


@pytest.mark.parametrize("env", ["jupyter", "desktop", "terminal"])
def test_inspect_eval_command_runs_a_task_by_name(env: str, tmp_path: Path) -> None:
    cell = CELLS[env]
    inspect = peer_python("inspect").with_name("inspect")
    with scripted_model(env) as (url, log):
        cmd = [
            str(inspect),
            "eval",
            f"{ROOT / 'examples' / 'inspect_tasks.py'}@{env}",
            "-T",
            f"tasks={cell.task_id}",
            "--model",
            "openai-api/scripted/scripted",
            "--display",
            "none",
            "--log-format",
            "json",
            "--log-dir",
            str(tmp_path),
        ]
        environ = {**os.environ, "SCRIPTED_BASE_URL": url, "SCRIPTED_API_KEY": "scripted", "PYTHONPATH": str(ROOT)}
        result = subprocess.run(cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    [path] = tmp_path.glob("*.json")
    eval_log = json.loads(path.read_text())
    assert eval_log["status"] == "success", eval_log.get("error")
    assert eval_log["eval"]["task"] == env
    [sample] = eval_log["samples"]
    assert sample["id"] == cell.task_id
    score = sample["scores"]["_episode_reward"]
    assert score["value"] == pytest.approx(reference(env).total)
    assert score["metadata"]["done"] is True
    seen, _, images = model_view(log)
    assert any(cell.prompt_fragment in text for text in seen)
    if cell.images:  # the screenshots reached the model as image parts
        assert any(image["size"] == [1024, 768] for image in images), images
