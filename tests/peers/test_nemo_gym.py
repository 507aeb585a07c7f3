"""nemo-gym 0.7.0's own ``ServerClient``, agents and ``ng_collect_rollouts`` on our resources servers.

Our servers, the dataset exporter and the scripted model run here, in the main virtualenv; the
scripts (``tests/peers/nemo_gym/play_wordle.py``, ``simple_agent.py`` for NeMo's own agent loop,
``collect_rollouts.py`` for NeMo's rollout collection through its ``legacy_agent`` relays) run in
nemo-gym's virtualenv (Python 3.11, installed by ``tests/peers/nemo_gym/install.sh``), with no Ray.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson
import pytest

from omnienv.app import create_app
from omnienv.dialects.nemo_gym import nemo_gym_rows
from omnienv.dialects.nemo_gym_gymnasium import nemo_gym_app
from omnienv.envs.wordle import Wordle
from omnienv.server import running
from tests.matrix.cells import MatrixWordle
from tests.matrix.model import scripted_model
from tests.peerenv import PEERS, ROOT, peer_python
from tests.peers._run import by_kind, run_json

AGENTS = "responses_api_agents"


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[dict[str, Any]], int]]:
    python = peer_python("nemo_gym")
    rows = Path(tmp_path_factory.mktemp("nemo")) / "wordle.jsonl"
    rows.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in nemo_gym_rows(Wordle, "test", limit=4)))
    app = create_app(Wordle)
    with pytest.MonkeyPatch.context() as patch, running(app) as url:
        patch.setenv("OMNIENV_URL", url)
        patch.setenv("OMNIENV_ROWS", str(rows))
        lines = run_json(python, PEERS / "nemo_gym" / "play_wordle.py", timeout=300)
        yield lines, app.state.manager.active


def test_nemo_reads_our_exported_rows(outcome: tuple[list[dict[str, Any]], int]) -> None:
    (rows,) = by_kind(outcome[0], "rows")
    assert rows["count"] == 4 and rows["tools"] == ["guess", "get_history"]
    assert rows["keys"] == ["env", "responses_create_params", "seed", "split", "task_id"]  # no answer


def test_server_client_seeds_guesses_and_gets_the_reward_from_verify(
    outcome: tuple[list[dict[str, Any]], int],
) -> None:
    (episode,) = by_kind(outcome[0], "episode")
    assert episode["outputs"][-1].endswith(f"Correct! Solved in {episode['guesses']} guesses.")
    assert episode["reward"] == 1.0 + 0.5 * (1 - episode["guesses"] / 6)
    assert episode["mask_sample"] is False and episode["echoed"]


def test_missing_forged_and_closed_sessions_get_clear_errors(outcome: tuple[list[dict[str, Any]], int]) -> None:
    (errors,) = by_kind(outcome[0], "errors")
    assert errors["missing"] == [401, "NO_SESSION_COOKIE"]
    assert errors["forged"] == [403, "BAD_SESSION_COOKIE"]
    assert errors["wrong"] == [422, "VALIDATION_ERROR"]
    assert errors["closed"] == [200, {"closed": True}]
    assert errors["after"] == [404, "SESSION_NOT_FOUND"]


def test_aggregate_metrics_and_sessions_closed(outcome: tuple[list[dict[str, Any]], int]) -> None:
    lines, active = outcome
    (metrics,) = by_kind(lines, "metrics")
    assert metrics["status"] == 200 and metrics["second"] > 1.0
    agent = metrics["body"]["agent_metrics"]
    assert agent["num_rollouts"] == 2 and agent["mean/reward"] > 1.0
    assert active == 0


def test_example_runs_as_written() -> None:
    python = peer_python("nemo_gym")
    example = ROOT / "examples" / "nemo_gym_wordle.py"
    result = subprocess.run(
        [str(python), str(example), "--episodes", "2"], capture_output=True, text=True, timeout=240, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all("/verify reward 1." in line for line in lines), result.stdout


def test_nemo_simple_agent_runs_rollouts_on_our_server(tmp_path: Path) -> None:
    """NeMo's own agent loop: /seed_session, model-chosen tool calls with the cookie, /verify."""
    python = peer_python("nemo_gym")
    rows = tmp_path / "wordle.jsonl"
    rows.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in nemo_gym_rows(Wordle, "test", limit=2)))
    app = create_app(Wordle)
    with pytest.MonkeyPatch.context() as patch, running(app) as url:
        patch.setenv("OMNIENV_URL", url)
        patch.setenv("OMNIENV_ROWS", str(rows))
        runs = by_kind(run_json(python, PEERS / "nemo_gym" / "simple_agent.py", timeout=300), "run")
        left_open = app.state.manager.active
    assert [run["task_id"] for run in runs] == ["test/0000", "test/0001"]
    for run in runs:
        assert run["reward"] == 1.0 + 0.5 * (1 - run["guesses"] / 6) and run["mask_sample"] is False
        assert run["done"] is True and "Correct!" in run["last"]  # /verify's done; the body is the text
    assert left_open == 2  # simple_agent's /run never calls /close_session: the idle reaper frees them


def test_ng_collect_rollouts_collects_episodes_end_to_end(tmp_path: Path) -> None:
    """NeMo's own ``ng_collect_rollouts`` (through its ``legacy_agent`` relays) on our servers:
    ``simple_agent`` and ``gymnasium_agent`` rollouts scored, a crash masked by ``mask_sample``."""
    python = peer_python("nemo_gym")
    rows = list(nemo_gym_rows(MatrixWordle, "test", limit=2))
    with ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        simple = create_app(MatrixWordle)
        gym = nemo_gym_app(MatrixWordle)
        simple_url, gym_url = stack.enter_context(running(simple)), stack.enter_context(running(gym))
        model, _ = stack.enter_context(scripted_model("wordle"))
        crash_model, _ = stack.enter_context(scripted_model("wordle", crash=True))
        lanes = [
            {"name": "wordle_simple", "agent": "simple_agent", "resources": simple_url, "model": model},
            {"name": "wordle_gym", "agent": "gymnasium_agent", "resources": gym_url, "model": model},
            {"name": "wordle_crash", "agent": "simple_agent", "resources": simple_url, "model": crash_model},
        ]
        data = [
            *({**row, "agent_ref": {"type": AGENTS, "name": "wordle_simple"}} for row in rows),
            {**rows[0], "agent_ref": {"type": AGENTS, "name": "wordle_gym"}},
            {**rows[1], "agent_ref": {"type": AGENTS, "name": "wordle_crash"}},
        ]
        patch.setenv("OMNIENV_NEMO", json.dumps({"lanes": lanes, "rows": data, "out": str(tmp_path / "out")}))
        lines = run_json(python, PEERS / "nemo_gym" / "collect_rollouts.py", timeout=300)
        left_open = gym.state.manager.active
    rollouts = [line["rollout"] for line in by_kind(lines, "rollout")]
    by_lane: dict[str, list[dict[str, Any]]] = {}
    for rollout in rollouts:
        by_lane.setdefault(rollout["agent_ref"]["name"], []).append(rollout)
    assert sorted(rollout["task_id"] for rollout in by_lane["wordle_simple"]) == ["test/0000", "test/0001"]
    for rollout in by_lane["wordle_simple"]:
        assert rollout["reward"] > 1.0 and rollout["done"] is True and rollout["mask_sample"] is False
    (played,) = by_lane["wordle_gym"]
    assert played["reward"] > 1.0 and played["terminated"] is True  # /step's rewards, summed by NeMo
    assert left_open == 0  # gymnasium_agent closes what it opened (/close)
    (crashed,) = by_lane["wordle_crash"]
    assert crashed["mask_sample"] is True and crashed["failure_kind"] == "omnienv:env_error"
    assert "sandbox died" in crashed["failure_reason"]
    assert not [line for line in lines if line["kind"] == "failure"]
    (metrics,) = by_kind(lines, "metrics")
    agents = {entry["agent_ref"]["name"]: entry["agent_metrics"] for entry in metrics["metrics"]}
    assert agents["wordle_simple"]["num_rollouts"] == 2 and agents["wordle_simple"]["mean/reward"] > 1.0
    assert agents["wordle_crash"]["num_masked"] == 1 and agents["wordle_crash"]["mean/reward"] is None
