"""``omnienv export harbor``: any environment as Harbor task directories, and read back as itself."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import omnienv
from omnienv.cli.main import app
from omnienv.core import load_environment
from omnienv.envs.terminal import Terminal, export_harbor
from omnienv.envs.terminal.oracle import HarborOracle
from omnienv.envs.wordle import Wordle
from omnienv.envs.wordle.solver import WordleSolver
from omnienv.rollout import EpisodePlan, RandomPolicy, rollout
from omnienv.rollout.trajectory import Episode
from omnienv.sandboxes.bubblewrap import LAUNCH_ENV, bwrap_command, python_paths

PROJECT = Path(omnienv.__file__).resolve().parents[1]


def rewards(env_class: type, make_policy, task_ids: list[str]) -> list[float | None]:  # type: ignore[no-untyped-def]
    episodes: list[Episode] = []
    plans = [EpisodePlan(i, task_id, 100 + i) for i, task_id in enumerate(task_ids)]
    rollout(env_class, make_policy, plans, concurrency=2, on_episode=episodes.append)
    return [e.reward if e.failure is None else None for e in sorted(episodes, key=lambda e: e.index)]


def test_wordle_exported_and_read_back_has_the_same_tasks_and_rewards(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["export", "harbor", "wordle", "--out", str(tmp_path), "--split", "test"])
    assert result.exit_code == 0, result.output
    native = Wordle.task_index().split("test")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(t.id.replace("/", "-") for t in native)
    task_dir = tmp_path / "test-0007"
    config = tomllib.loads((task_dir / "task.toml").read_text())
    assert config["metadata"]["omnienv"] == {
        "env": "wordle",
        "task": "test/0007",
        "seed": 0,
        "version": omnienv.__version__,
    }
    assert config["verifier"]["timeout_sec"] > 0 and config["environment"]["allow_internet"] is False
    instruction = (task_dir / "instruction.md").read_text()
    assert (
        instruction.startswith(Wordle().reset("test/0007", seed=0).text) and "omnienv harbor act guess" in instruction
    )
    answer = str(Wordle.task_index().find("test/0007").answer)
    for path in task_dir.rglob("*"):  # the answer lives in the environment, never in the task's files
        assert path.is_dir() or answer not in path.read_text().lower(), path

    back = load_environment(str(tmp_path))
    assert back.splits == ("test",) and [t.id for t in back.tasks("test")] == [t.id for t in native]
    ids = [t.id for t in native[:12]]
    assert rewards(back, WordleSolver, ids) == rewards(Wordle, WordleSolver, ids)
    random_player = lambda: RandomPolicy(Wordle.tools, seed=3, strings=Wordle.random_strings())  # noqa: E731
    assert rewards(back, random_player, ids) == rewards(Wordle, random_player, ids)


def run_as_harbor(task_dir: Path, script: str, workspace: Path, logs: Path) -> subprocess.CompletedProcess[str]:
    """``script`` as a Harbor runner would run it in the task's image: workspace at /app, /tests and
    /logs/verifier mounted, omnienv installed (here: this interpreter and checkout, read-only)."""
    env = dict(LAUNCH_ENV, HOME="/home/user", PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    dockerfile = (task_dir / "environment" / "Dockerfile").read_text()
    env.update(pair.split("=", 1) for pair in shlex.split(dockerfile.split("ENV ", 1)[1]))  # quoted as Docker reads
    command = bwrap_command(
        ["bash", "-c", f"cd /app && bash {script}"],
        work_dir=str(workspace.parent / "home"),
        read_only=[*python_paths(), str(PROJECT)],
        files=[(str(task_dir / "tests"), "/tests"), (str(task_dir / "solution"), "/solution")],
        binds=[(str(workspace), "/app"), (str(logs), "/logs/verifier")],
        env=env,
    )
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=dict(LAUNCH_ENV), check=False)


@pytest.mark.parametrize("task_id", ["test/0003", "test/0100"])
def test_an_exported_task_runs_as_harbor_runs_it_solution_then_verifier(tmp_path: Path, task_id: str) -> None:
    export_harbor(Wordle, tmp_path / "tasks", ["test"])
    task_dir = tmp_path / "tasks" / task_id.replace("/", "-")
    for name in ("workspace", "home", "logs"):
        (tmp_path / name).mkdir()
    solved = run_as_harbor(task_dir, "/solution/solve.sh", tmp_path / "workspace", tmp_path / "logs")
    assert solved.returncode == 0, solved.stderr
    graded = run_as_harbor(task_dir, "/tests/test.sh", tmp_path / "workspace", tmp_path / "logs")
    assert graded.returncode == 0, graded.stderr
    reward = json.loads((tmp_path / "logs" / "reward.json").read_text())["reward"]
    assert reward == rewards(Wordle, WordleSolver, [task_id])[0] and reward > 1.0
    idle = tmp_path / "idle"
    idle.mkdir()
    (tmp_path / "logs" / "reward.json").unlink()
    assert run_as_harbor(task_dir, "/tests/test.sh", idle, tmp_path / "logs").returncode == 0
    assert json.loads((tmp_path / "logs" / "reward.json").read_text())["reward"] == 0.0


def test_harbor_tasks_export_as_themselves(tmp_path: Path) -> None:
    written = export_harbor(Terminal, tmp_path, ["test"])
    assert written and all((path / "tests" / "test.sh").is_file() for path in written)
    links = [path for path in tmp_path.rglob("*") if path.is_symlink()]
    assert not links, f"an exported task must stand alone (the suite's shared files copied in): {links[:3]}"
    back = load_environment(str(tmp_path))
    assert [t.id for t in back.tasks("test")] == [t.id for t in Terminal.tasks("test")]
    ids = [t.id for t in Terminal.tasks("test")[:3]]
    assert rewards(back, lambda: HarborOracle(back), ids) == rewards(Terminal, HarborOracle, ids) == [1.0] * len(ids)
