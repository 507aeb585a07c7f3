"""The catalog's reasoning-gym source, in reasoning-gym 0.1.25's own virtualenv.

The script (``tests/catalog/peer_checks.py``) checks the manifest against the live library, runs
five datasets through the contract checker, scores each item's own answer (1) and a wrong one
(0), serves one episode over ``/ws`` and plays one through omnienv's Gymnasium dialect.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind, run_json

SCRIPT = ROOT / "tests" / "catalog" / "peer_checks.py"


@pytest.fixture(scope="module")
def lines() -> list[dict[str, Any]]:
    return run_json(peer_python("reasoning_gym"), SCRIPT, timeout=240)  # the script picks reasoning-gym here


def test_the_manifest_matches_the_live_library(lines: list[dict[str, Any]]) -> None:
    (manifest,) = by_kind(lines, "manifest")
    assert manifest["problems"] == []


def test_a_sample_of_datasets_passes_the_checker(lines: list[dict[str, Any]]) -> None:
    checks = by_kind(lines, "check")
    assert len(checks) == 5
    assert all(check["ok"] for check in checks), [check for check in checks if not check["ok"]]


def test_the_libraries_scorer_gives_the_reward(lines: list[dict[str, Any]]) -> None:
    for line in by_kind(lines, "score"):
        # [reward, done, no failure] for the item's own answer, then for a wrong one
        assert line["scores"] == [[1.0, True, True], [0.0, True, True]], line


def test_an_episode_over_ws_serves_the_librarys_own_item(lines: list[dict[str, Any]]) -> None:
    (ws,) = by_kind(lines, "ws")
    assert ws["prompt"] and ws["tools"] == ["answer"]
    assert (ws["reward"], ws["done"]) == (1.0, True)


def test_an_episode_through_the_gymnasium_dialect(lines: list[dict[str, Any]]) -> None:
    (dialect,) = by_kind(lines, "dialect")
    assert dialect["prompt"] and dialect["reward"] == 1.0 and dialect["over"] == [True, False]
