"""``omnienv agent run`` with an unchanged agent CLI: the records file holds the model server's own tokens.

The agent (``tests/agents/cli_agent/agent.py``, a real program on the ``openai`` package, described
by a harness spec) knows nothing of the capture: the runner hands it the proxy's per-episode URL as
its model's base URL, and nothing else changes. Its model is the scripted vLLM-like endpoint, served
in this process so that what it sampled (``app.state.produced``) can be compared, token for token,
with the training record the command wrote, and with TRL's rows exported from it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from omnienv.capture import read_records, to_trl_rollout
from omnienv.rollout import read_episodes
from omnienv.rollout.scripted_openai import create_app
from omnienv.server import running
from tests.agents.scripted import replay_responder
from tests.agents.test_cli_harness import SPEC, SUBMIT, terminal_task
from tests.peerenv import ROOT


def test_omnienv_agent_run_writes_the_servers_tokens(tmp_path: Path) -> None:
    task_id, scripts = terminal_task()
    upstream = create_app(replay_responder(scripts, lambda: [], SUBMIT))
    out, records = tmp_path / "run.jsonl", tmp_path / "run.records.jsonl"
    with running(upstream) as url:
        command = [sys.executable, "-m", "omnienv.cli.main", "agent", "run", str(SPEC), "terminal"]
        command += ["--model", "scripted", "--base-url", f"{url}/v1", "--task", task_id]
        command += ["--out", str(out), "--records", str(records), "--workdir", str(tmp_path / "work")]
        done = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    produced = upstream.state.produced
    (record,) = read_records(records)
    (line,) = read_episodes(out)
    assert record.reward == line.reward == 1.0 and record.trainable and not record.missing
    assert len(record.calls) == len(produced) == len(line.model_calls or ()) >= 3
    for call, made in zip(record.calls, produced, strict=True):  # what the server sampled, call by call
        assert call.prompt_token_ids == made.prompt_token_ids
        assert call.completion_token_ids == made.completion_token_ids
        assert call.logprobs == pytest.approx(made.logprobs)
        assert "return_token_ids" not in call.request and "logprobs" not in call.request  # the agent's own body
        assert "prompt_token_ids" not in call.response and call.response["choices"][0].get("logprobs") is None

    # The agent keeps its whole history, so every prompt extends the one before: one token sequence,
    # the last prompt plus the last completion, the model's tokens (and only those) under the loss mask.
    (segment,) = record.segments or []
    assert segment.token_ids == produced[-1].prompt_token_ids + produced[-1].completion_token_ids
    generated = [token for made in produced for token in made.completion_token_ids]
    assert [t for t, m in zip(segment.token_ids, segment.loss_mask, strict=True) if m] == generated
    sampled = [logprob for made in produced for logprob in made.logprobs]
    assert [p for p, m in zip(segment.logprobs, segment.loss_mask, strict=True) if m] == pytest.approx(sampled)
    rows = to_trl_rollout([record])
    assert rows["prompt_ids"] == [produced[0].prompt_token_ids] and rows["reward"] == [1.0]
    assert rows["prompt_ids"][0] + rows["completion_ids"][0] == segment.token_ids
