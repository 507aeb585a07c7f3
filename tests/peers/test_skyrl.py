"""skyrl-gym 0.4.0 builds our Wordle with ``skyrl_gym.make(id, env_config=, extras=)``; the solver wins.

The script (``tests/peers/skyrl/play_wordle.py``) runs in skyrl-gym's own virtualenv.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.peerenv import PEERS, ROOT, peer_python
from tests.peers._run import by_kind, run_json


@pytest.fixture(scope="module")
def lines() -> list[dict]:
    python: Path = peer_python("skyrl")
    return run_json(python, PEERS / "skyrl" / "play_wordle.py", timeout=180)


def test_skyrl_make_plays_wordle_to_a_win(lines: list[dict]) -> None:
    games = by_kind(lines, "wordle")
    assert [game["meta"]["task_id"] for game in games] == ["test/0000", "test/0001"]
    for game in games:
        assert game["is_base_text_env"] and game["system"] == "system"
        assert game["metadata"]["success"] is True
        assert all(reward == 0.0 for reward in game["rewards"][:-1])  # the outcome comes on the last turn
        assert game["rewards"][-1] > 1.0 and game["rewards"][-1] == game["metadata"]["rubric"]["solved"]
        assert game["metrics"]["turns"] == game["turns"] == len(game["rewards"])
        assert game["metrics"]["failure"] == 0.0


def test_empty_prompt_gets_tools_and_the_env_prompt(lines: list[dict]) -> None:
    (empty,) = by_kind(lines, "empty_prompt")
    assert empty["roles"] == ["system", "user"] and empty["tools_listed"]
    assert empty["meta"]["task_id"] == "test/0003"


def test_an_image_reaches_the_model_as_an_image_part(lines: list[dict]) -> None:
    (image,) = by_kind(lines, "image")
    assert image["parts"] == ["text", "image_url"] and image["png"] is True
    (prompt,) = by_kind(lines, "prompt_image")
    assert prompt["parts"] == ["text", "image_url"]


def test_failure_ends_the_episode_flagged(lines: list[dict]) -> None:
    (failure,) = by_kind(lines, "failure")
    assert failure["done"] and failure["reward"] is None  # no reward for a void episode, never 0
    assert failure["failure"]["kind"] == "env_error" and failure["metrics"]["failure"] == 1.0


def test_replies_without_calls_teach_the_format_and_max_turns_applies(lines: list[dict]) -> None:
    (limit,) = by_kind(lines, "limit")
    assert limit["first"].startswith("No tool call found") and "<guess>word</guess>" in limit["first"]
    assert not limit["first_done"] and limit["second_done"]


def test_example_runs_as_written() -> None:
    python = peer_python("skyrl")
    example = ROOT / "examples" / "skyrl_gym_wordle.py"
    result = subprocess.run([str(python), str(example)], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.count("success=True") == 3
