"""NeMo Gym: its own agents and ``ng_collect_rollouts`` (its virtualenv) on our resources servers.

Here, in the main virtualenv: our resources server per environment and a scripted model per
lane (:func:`tests.matrix.model.scripted_model`), which records what NeMo's agent sent it. The
driver (:mod:`tests.matrix.drivers.nemo_gym`) runs NeMo's agents and its rollout collection on
one JSONL of our dataset rows. Wordle, Jupyter and the terminal play through ``simple_agent``
(tool replies are text); the desktop through ``gymnasium_agent``, the one NeMo agent whose tool
outputs can be image parts (:mod:`omnienv.dialects.nemo_gym_gymnasium`). Every crash runs through
``simple_agent`` and ``/verify``, which masks it with NeMo's own ``mask_sample``.
"""

from __future__ import annotations

import json
import tempfile
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from omnienv.app import create_app
from omnienv.dialects.nemo_gym_data import nemo_gym_task_rows
from omnienv.dialects.nemo_gym_gymnasium import nemo_gym_app
from omnienv.server import running
from tests.matrix.cells import CELLS, cell_report, crash_report
from tests.matrix.model import ModelLog, model_view, scripted_model
from tests.peerenv import ROOT, peer_python
from tests.peers._run import run_json

AGENTS = "responses_api_agents"


@dataclass(frozen=True)
class Lane:
    """What :class:`tests.peers.nemo_gym.ng_servers.Lane` takes, on this side."""

    name: str
    agent: str
    resources: str
    model: str


def _report(
    env: str, row: dict[str, Any], play: dict[str, Any], log: ModelLog, crash: dict[str, Any]
) -> dict[str, Any]:
    seen, texts, images = model_view(log)
    verified = {key: value for key, value in play.items() if key != "response"}  # the rest is tool output
    done = play["terminated"] if "terminated" in play else play["done"]
    return cell_report(
        env,
        rewards=None,  # NeMo reports one reward per rollout
        total=play["reward"],
        done=done,
        crash=crash,
        seen=[row, *seen, verified],
        texts=texts,
        images=images,
        notes=f"{play['agent_ref']['name']}: {len(images)} image part(s)",
    )


def collect() -> dict[str, dict[str, Any]]:
    python = peer_python("nemo_gym")
    with ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        out = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        lanes: list[Lane] = []
        rows: list[dict[str, Any]] = []
        logs: dict[str, ModelLog] = {}
        dataset: dict[str, dict[str, Any]] = {}
        for env, cell in CELLS.items():
            (row,) = nemo_gym_task_rows(cell.env_class, [cell.task_id])
            dataset[env] = row
            app = nemo_gym_app(cell.env_class) if cell.images else create_app(cell.env_class)
            resources = stack.enter_context(running(app, timeout=60))
            for lane_kind in ("play", "crash"):
                name = f"{env}_{lane_kind}"
                model, logs[name] = stack.enter_context(scripted_model(env, crash=lane_kind == "crash"))
                agent = "gymnasium_agent" if cell.images and lane_kind == "play" else "simple_agent"
                lanes.append(Lane(name, agent, resources, model))
                rows.append({**row, "agent_ref": {"type": AGENTS, "name": name}})
        spec = {"lanes": [asdict(lane) for lane in lanes], "rows": rows, "out": str(out)}
        patch.setenv("OMNIENV_NEMO", json.dumps(spec))
        lines = run_json(python, ROOT / "tests" / "matrix" / "drivers" / "nemo_gym.py", timeout=420)
    rollouts = {line["rollout"]["agent_ref"]["name"]: line["rollout"] for line in lines if line["kind"] == "rollout"}
    failed = {_lane(line["failure"]): line["failure"] for line in lines if line["kind"] == "failure"}
    reports = {}
    for env in CELLS:
        play = rollouts.get(f"{env}_play")
        if play is None:
            raise AssertionError(f"NeMo collected no rollout of {env}: {failed.get(f'{env}_play')}")
        crashed = rollouts.get(f"{env}_crash")
        if crashed is not None:
            crash = crash_report(crashed["reward"], "mask_sample", crashed.get("mask_sample") is True)
        else:  # a failed rollout: NeMo's failures sidecar, no reward at all
            crash = crash_report(None, "failures sidecar", f"{env}_crash" in failed)
        reports[env] = _report(env, dataset[env], play, logs[f"{env}_play"], crash)
    return reports


def _lane(failure: dict[str, Any]) -> str:
    ref = failure.get("agent_ref") or (failure.get("row") or {}).get("agent_ref") or {}
    return str(ref.get("name"))
