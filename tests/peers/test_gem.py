"""gem-llm 0.1.0 plays our Wordle through ``gem.make`` and ``gem.make_vec`` to a win.

The script (``tests/peers/gem/play_wordle.py``) runs in gem-llm's own Python 3.11 virtualenv.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.peerenv import PEERS, ROOT, peer_python
from tests.peers._run import by_kind, run_json


@pytest.fixture(scope="module")
def lines() -> list[dict]:
    return run_json(peer_python("gem", "python3.11"), PEERS / "gem" / "play_wordle.py", timeout=240)


def test_gem_make_plays_wordle_to_a_win(lines: list[dict]) -> None:
    (game,) = by_kind(lines, "make")
    assert game["is_gem_env"] and game["env_id"] == "omnienv:wordle"
    assert game["flags"] == [True, False] and game["success"] is True
    assert game["rewards"][-1] > 1.0 and sum(game["rewards"][:-1]) == 0.0
    assert game["tools_listed"] and "<guess>word</guess>" in game["suffix"]
    assert game["reset_repeats"]  # reset(seed=0) twice gives the same task and prompt
    assert game["random_action"].startswith("<tool_call>{")


def test_make_vec_plays_two_games_to_a_win(lines: list[dict]) -> None:
    (vec,) = by_kind(lines, "make_vec")
    assert vec["finished"] == [True, True]
    assert all(total > 1.0 for total in vec["totals"])
    assert vec["seeds"] == [3, 4]  # make_vec hands each copy its own seed


def test_spawn_and_failure(lines: list[dict]) -> None:
    (spawn,) = by_kind(lines, "spawn")
    assert spawn == {"kind": "spawn", "type": "GemEnv", "fresh": True, "resets": True}
    (failure,) = by_kind(lines, "failure")
    assert failure["reward_is_nan"]  # no reward at all for a void episode, never a 0
    assert (failure["terminated"], failure["truncated"]) == (False, True)
    assert failure["failure"]["kind"] == "env_error"


def test_an_image_reaches_the_agent_as_gems_visual_observation(lines: list[dict]) -> None:
    (image,) = by_kind(lines, "image")
    assert image["prompt_is_text"] and image["keys"] == ["images", "text"] and image["text"] == "a 1x1 screen"
    assert image["images"] == [["RGB", [1, 1]]] and image["pil"]


def test_example_runs_as_written() -> None:
    python = peer_python("gem")
    example = ROOT / "examples" / "gem_wordle.py"
    result = subprocess.run([str(python), str(example)], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Correct!" in result.stdout
    assert "gem.make_vec: rewards" in result.stdout
