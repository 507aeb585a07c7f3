"""A loop-owning harness, unchanged, through the capture proxy: training records come out.

Inspect AI's ``inspect eval`` (in its own virtualenv) owns the model and tool loop of our Wordle
task. Its only change is the base URL: the proxy's per-episode one. The proxy forwards to a
vLLM-like endpoint (the scripted solver, which answers vLLM's token fields from its own
tokeniser), and the calls it recorded make a training record whose tokens are exactly what the
server produced, with a loss mask over the model's tokens only, exported to TRL's rollout rows.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from omnienv.capture import CaptureProxy, TrainingRecord, to_trl_rollout
from omnienv.envs.wordle.responder import wordle_responder
from omnienv.rollout.scripted_openai import create_app
from omnienv.server import running
from tests.peerenv import ROOT, peer_python

TASK = "test/0000"


def test_inspect_eval_through_the_proxy_gives_token_exact_records(tmp_path: Path) -> None:
    inspect = peer_python("inspect").with_name("inspect")
    upstream = create_app(wordle_responder)
    with running(upstream) as server, CaptureProxy(f"{server}/v1") as proxy:
        command = [str(inspect), "eval", f"{ROOT / 'examples' / 'inspect_tasks.py'}@wordle", "-T", f"tasks={TASK}"]
        command += ["--model", "openai-api/scripted/scripted", "--display", "none", "--log-format", "json"]
        command += ["--log-dir", str(tmp_path)]
        environ = {
            **os.environ,
            "SCRIPTED_BASE_URL": proxy.episode_url("inspect-wordle"),  # the harness's one change
            "SCRIPTED_API_KEY": "scripted",
            "PYTHONPATH": str(ROOT),
        }
        result = subprocess.run(command, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
        calls = proxy.calls("inspect-wordle")
    [path] = tmp_path.glob("*.json")
    [sample] = json.loads(path.read_text())["samples"]
    reward = sample["scores"]["_episode_reward"]["value"]
    assert reward > 1.0  # the solver won, as Inspect scored it

    produced = upstream.state.produced
    assert len(calls) == len(produced) >= 2
    for call, sample_made in zip(calls, produced, strict=True):  # what the server made, token for token
        assert call.prompt_token_ids == sample_made.prompt_token_ids
        assert call.completion_token_ids == sample_made.completion_token_ids
        assert call.logprobs == pytest.approx(sample_made.logprobs)
    record = TrainingRecord.from_calls(calls, reward, None, "inspect-wordle")
    assert record.trainable and record.segments is not None
    generated = sum(len(call.completion_token_ids or ()) for call in calls)
    assert sum(sum(segment.loss_mask) for segment in record.segments) == generated  # the model's tokens only
    rows = to_trl_rollout([record])
    assert rows["prompt_ids"] == [calls[0].prompt_token_ids]
