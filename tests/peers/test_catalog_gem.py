"""The catalog's GEM source, in gem-llm 0.1.0's own virtualenv (tests/peers/gem).

The script (``tests/catalog/peer_checks.py``) checks the manifest against the live library, runs
five GEM environments through the contract checker, wins GuessTheNumber by binary search over
``/ws`` from a real server, and wins it again through GEM's own ``gem.make`` (omnienv's GEM
dialect wrapping the catalog environment).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind, run_json

SCRIPT = ROOT / "tests" / "catalog" / "peer_checks.py"


@pytest.fixture(scope="module")
def lines() -> list[dict[str, Any]]:
    return run_json(peer_python("gem", "python3.11"), SCRIPT, timeout=240)  # the script picks GEM here


def test_the_manifest_matches_the_live_library(lines: list[dict[str, Any]]) -> None:
    (manifest,) = by_kind(lines, "manifest")
    assert manifest["problems"] == []


def test_a_sample_of_gem_environments_passes_the_checker(lines: list[dict[str, Any]]) -> None:
    checks = by_kind(lines, "check")
    assert len(checks) == 5
    assert all(check["ok"] for check in checks), [check for check in checks if not check["ok"]]


def test_guess_the_number_is_won_over_ws(lines: list[dict[str, Any]]) -> None:
    (ws,) = by_kind(lines, "ws")
    assert ws["prompt"] and ws["tools"] == ["act"]
    assert ws["done"] and ws["reward"] > 0


def test_guess_the_number_is_won_through_gem_make(lines: list[dict[str, Any]]) -> None:
    (dialect,) = by_kind(lines, "dialect")
    assert dialect["api"] == "gem" and dialect["prompt"]
    assert dialect["over"] == [True, False] and dialect["reward"] > 0
