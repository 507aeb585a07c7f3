"""``omnienv export harbor``: any environment as Harbor task directories, and read back as itself."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import omnienv
from omnienv.cli.main import app
from omnienv.core import load_environment
from omnienv.envs.terminal import Terminal, export_harbor
from omnienv.envs.terminal.export import HarborExportError
from omnienv.envs.terminal.oracle import HarborOracle
from omnienv.envs.wordle import Wordle
from omnienv.envs.wordle.solver import WordleSolver
from omnienv.rollout import EpisodePlan, RandomPolicy, rollout
from omnienv.rollout.trajectory import Episode
from omnienv.sandboxes.bubblewrap import LAUNCH_ENV, bwrap_command, python_paths

PROJECT = Path(omnienv.__file__).resolve().parents[1]
ARCHIVES = ("omnienv-src.tar.gz", "app.tar.gz")


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
    for path in task_dir.rglob("*"):  # the answer lives in the environment (omnienv's source), never in the task
        assert path.is_dir() or path.name in ARCHIVES or answer not in path.read_text().lower(), path

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
    task_line = next(line for line in dockerfile.splitlines() if line.startswith("ENV OMNIENV_HARBOR_ENV="))
    env.update(pair.split("=", 1) for pair in shlex.split(task_line.removeprefix("ENV ")))  # quoted as Docker reads
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


def unpacked(archive: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(archive) as tar:
        return {member.name: member for member in tar.getmembers()}


def read_member(archive: Path, name: str) -> str:
    with tarfile.open(archive) as tar:
        extracted = tar.extractfile(name)
        assert extracted is not None, name
        return extracted.read().decode()


def test_each_tasks_image_installs_omnienv_from_its_own_context_never_a_registry(tmp_path: Path) -> None:
    """omnienv's source goes into every task's environment/ as one archive (links to one file on
    disk): its Dockerfile builds with no registry holding omnienv, as `omnienv build` does."""
    written = export_harbor(Wordle, tmp_path, ["test"])
    task_dir = tmp_path / "test-0003"
    dockerfile = (task_dir / "environment" / "Dockerfile").read_text()
    assert "omnienv==" not in dockerfile and dockerfile.startswith("# ") and "\nFROM python:3.11-slim\n" in dockerfile
    assert "ADD omnienv-src.tar.gz /opt/omnienv/\n" in dockerfile
    assert 'RUN /opt/omnienv/venv/bin/pip install "/opt/omnienv/omnienv-src"\n' in dockerfile  # Wordle needs no extra
    assert "ENTRYPOINT" not in dockerfile and "\nWORKDIR /app\n" in dockerfile  # Harbor runs its own command
    archive = task_dir / "environment" / "omnienv-src.tar.gz"
    members = unpacked(archive)
    assert "omnienv-src/omnienv/envs/wordle/env.py" in members and not any("__pycache__" in m for m in members)
    assert {(m.uid, m.gid, m.mtime) for m in members.values()} == {(0, 0, 1577836800)}  # the same bytes each time
    pyproject = tomllib.loads(read_member(archive, "omnienv-src/pyproject.toml"))
    assert pyproject["project"]["version"] == omnienv.__version__ and pyproject["project"]["scripts"]["omnienv"]
    assert not any(r.startswith(("uvicorn", "starlette")) for r in pyproject["project"]["dependencies"])
    inodes = {(path / "environment" / "omnienv-src.tar.gz").stat().st_ino for path in written}
    assert len(inodes) == 1, "every task links the one archive"
    again = tmp_path / "again"
    export_harbor(Wordle, again, ["test"])
    assert (again / "test-0003" / "environment" / "omnienv-src.tar.gz").read_bytes() == archive.read_bytes()
    export_harbor(Wordle, tmp_path, ["test"])  # written again over an earlier export
    assert sorted(p.name for p in (task_dir / "environment").iterdir()) == ["Dockerfile", "omnienv-src.tar.gz"]


@pytest.fixture
def needy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An author's package outside omnienv whose environment needs an omnienv extra and a Debian package."""
    package = tmp_path / "src" / "needy_env"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "from omnienv.envs.doors import Doors\n\n\n"
        "class Needy(Doors):\n"
        "    name = 'needy'\n"
        "    extras = ('gymnasium',)\n"
        "    system_packages = ('cowsay',)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    yield "needy_env:Needy"
    sys.modules.pop("needy_env", None)


def test_each_tasks_image_brings_the_environments_extras_packages_and_code(tmp_path: Path, needy_package: str) -> None:
    pem = tmp_path / "proxy-ca.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\n")
    result = CliRunner().invoke(
        app,
        ["export", "harbor", needy_package, "--out", str(tmp_path / "out"), "--split", "test",
         "--base", "debian:bookworm-slim", "--ca-cert", str(pem)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    context = tmp_path / "out" / "test-00" / "environment"
    dockerfile = (context / "Dockerfile").read_text()
    assert "\nFROM debian:bookworm-slim\n" in dockerfile and 'packages="cowsay"' in dockerfile
    assert 'pip install "/opt/omnienv/omnienv-src[gymnasium]"' in dockerfile
    assert "ADD app.tar.gz /opt/omnienv/\n" in dockerfile and 'ENV PYTHONPATH="/opt/omnienv/app"\n' in dockerfile
    assert "COPY build-ca.pem /opt/omnienv/build-ca.pem\n" in dockerfile and (context / "build-ca.pem").is_file()
    assert 'ENV OMNIENV_HARBOR_ENV="needy_env:Needy"' in dockerfile
    assert "app/needy_env/__init__.py" in unpacked(context / "app.tar.gz")
    pyproject = read_member(context / "omnienv-src.tar.gz", "omnienv-src/pyproject.toml")
    assert '"gymnasium>=1.0"' in pyproject and "jupyter_client" not in pyproject


def test_a_catalog_environment_is_named_so_that_its_tasks_load_it_again(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["export", "harbor", "gymnasium/FrozenLake-v1", "--out", str(tmp_path), "--split", "test"]
    )
    assert result.exit_code == 0, result.output
    task_dir = tmp_path / "test-00000"
    spec = tomllib.loads((task_dir / "task.toml").read_text())["metadata"]["omnienv"]["env"]
    assert spec == "gymnasium/FrozenLake-v1" and load_environment(spec) is load_environment("gymnasium/FrozenLake-v1")
    dockerfile = (task_dir / "environment" / "Dockerfile").read_text()
    assert 'pip install "/opt/omnienv/omnienv-src[gymnasium]"' in dockerfile
    assert 'ENV OMNIENV_HARBOR_ENV="gymnasium/FrozenLake-v1"' in dockerfile


@pytest.mark.parametrize("name", ["jupyter", "desktop"])
def test_an_environment_that_sandboxes_the_agents_code_is_refused_with_what_to_do(tmp_path: Path, name: str) -> None:
    """Harbor starts task containers without the two options bubblewrap needs (docs/deploy.md), and
    omnienv never runs the agent's code unsandboxed: the export says so, and writes nothing."""
    result = CliRunner().invoke(app, ["export", "harbor", name, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "bubblewrap" in message and "seccomp=unconfined" in message and "cannot be exported to Harbor" in message
    assert f"omnienv serve {name}" in message and f"omnienv build {name}" in message
    assert not (tmp_path / "out").exists()
    with pytest.raises(HarborExportError, match="bubblewrap"):
        export_harbor(load_environment(name), tmp_path / "out")


def test_harbor_tasks_export_as_themselves(tmp_path: Path) -> None:
    written = export_harbor(Terminal, tmp_path, ["test"])
    assert written and all((path / "tests" / "test.sh").is_file() for path in written)
    links = [path for path in tmp_path.rglob("*") if path.is_symlink()]
    assert not links, f"an exported task must stand alone (the suite's shared files copied in): {links[:3]}"
    back = load_environment(str(tmp_path))
    assert [t.id for t in back.tasks("test")] == [t.id for t in Terminal.tasks("test")]
    ids = [t.id for t in Terminal.tasks("test")[:3]]
    assert rewards(back, lambda: HarborOracle(back), ids) == rewards(Terminal, HarborOracle, ids) == [1.0] * len(ids)
