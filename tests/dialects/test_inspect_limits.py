"""Inspect AI's own sample limits cut an omnienv episode short: scored as truncated, and closed.

Inspect stops a sample at its ``message_limit``, ``token_limit`` or ``time_limit`` by raising out
of the solver (a time limit cancels it), then scores the sample as it stands. The driver
(``tests/dialects/drivers/inspect_limits.py``) runs both in Inspect's virtualenv, through
``inspect_ai.eval``.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.peerenv import ROOT, peer_python


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    python = peer_python("inspect")
    module = "tests.dialects.drivers.inspect_limits"
    result = subprocess.run([str(python), "-m", module], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {line["kind"]: line for line in lines}


def test_a_message_limit_ends_and_scores_the_episode(reports: dict[str, dict]) -> None:
    found = reports["messages"]
    assert found["status"] == "success" and found["limit"] == "message" and found["error"] is None
    assert found["outcome"] is not None, "the sample was left unscored, as if the environment had failed"
    assert found["outcome"]["truncated"] and not found["outcome"]["done"] and found["outcome"]["failure"] is None
    assert found["score"] == pytest.approx(1.0 + 0.5 * 2)  # the rubric, and the two ticks that ran
    assert found["events"] == ["setup", "closed"]


def test_a_time_limit_ends_scores_and_closes_the_episode(reports: dict[str, dict]) -> None:
    found = reports["time"]
    assert found["status"] == "success" and found["limit"] == "time" and found["error"] is None
    assert found["events"] == ["setup", "closed"], "the environment was not closed: its sandbox would leak"
    assert found["outcome"] is not None and found["outcome"]["truncated"] and found["outcome"]["failure"] is None
    assert found["score"] == pytest.approx(1.0)  # the rubric on the state reached; the stalled call paid nothing
