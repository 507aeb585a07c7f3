"""The catalog's TextArena source, in textarena 0.7.4's own virtualenv (tests/peers/textarena).

The script (``tests/catalog/peer_checks.py``) checks the manifest against the live library, runs
five TextArena games through the contract checker, plays scripted episodes (a Tower of Hanoi win,
a Mastermind lost to invalid moves, a GuessTheNumber run into its turn limit), wins
GuessTheNumber by binary search over ``/ws`` from a real server, and wins it again through
omnienv's Gymnasium dialect.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind, run_json

SCRIPT = ROOT / "tests" / "catalog" / "peer_checks.py"


@pytest.fixture(scope="module")
def lines() -> list[dict[str, Any]]:
    return run_json(peer_python("textarena"), SCRIPT, timeout=240)  # the script picks TextArena here


def test_the_manifest_matches_the_live_library(lines: list[dict[str, Any]]) -> None:
    (manifest,) = by_kind(lines, "manifest")
    assert manifest["problems"] == []


def test_a_sample_of_textarena_games_passes_the_checker(lines: list[dict[str, Any]]) -> None:
    checks = by_kind(lines, "check")
    assert len(checks) == 5
    assert all(check["ok"] for check in checks), [check for check in checks if not check["ok"]]


def test_scripted_episodes_score_as_textarena_scores_them(lines: list[dict[str, Any]]) -> None:
    episodes = {line["name"]: line for line in by_kind(lines, "episode")}
    hanoi = episodes["textarena/TowerOfHanoi-v0"]
    assert (hanoi["moves"], hanoi["reward"], hanoi["over"]) == (7, 1.0, [True, False])
    # the first invalid move is a warning, the second ends the game: TextArena's partial score, 0 before any guess
    mastermind = episodes["textarena/Mastermind-v0"]
    assert (mastermind["moves"], mastermind["reward"], mastermind["over"]) == (2, 0.0, [True, False])
    assert "Invalid Move" in mastermind["text"]


def test_the_games_turn_limit_is_truncation_with_textarenas_score(lines: list[dict[str, Any]]) -> None:
    episode = {line["name"]: line for line in by_kind(lines, "episode")}["textarena/GuessTheNumber-v0"]
    assert episode["over"] == [False, True] and "turn limit" in episode["text"]
    # the episode has ended, so the game's closing words may name the number: 1 - distance / range
    guess, target = (int(n) for n in re.search(r"Guess: (\d+), Target: (\d+)", episode["text"]).groups())  # type: ignore[union-attr]
    assert episode["moves"] == guess == 11
    assert episode["reward"] == pytest.approx(1 - abs(target - guess) / 19)


def test_guess_the_number_is_won_over_ws(lines: list[dict[str, Any]]) -> None:
    (ws,) = by_kind(lines, "ws")
    assert ws["prompt"] and ws["tools"] == ["act"]
    assert ws["done"] and ws["reward"] == 1.0


def test_guess_the_number_is_won_through_the_gymnasium_dialect(lines: list[dict[str, Any]]) -> None:
    (dialect,) = by_kind(lines, "dialect")
    assert dialect["api"] == "gymnasium" and dialect["prompt"]
    assert dialect["over"] == [True, False] and dialect["reward"] == 1.0
