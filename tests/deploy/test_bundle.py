"""Build contexts and Space bundles, read and run without Docker: the bundle's own entry command
serves the environment from its folder, and each kind of environment brings what it needs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from omnienv.cli.main import app
from omnienv.client import WebSocketClient
from omnienv.core import ToolCall
from omnienv.deploy import DeployError, plan_image, space_host, write_context, write_space_bundle
from omnienv.envs.terminal.env import SUITE
from omnienv.server import running
from tests.deploy.hub import Hub
from tests.net import free_port
from tests.polling import wait_healthy

OMNIENV = str(Path(sys.executable).with_name("omnienv"))


def _serve_from(bundle: Path, port: int) -> subprocess.Popen[str]:
    """The bundle's entry command as a person runs it from the folder, on this machine's Python,
    with an environment that holds nothing of this checkout (no PYTHONPATH, another working dir)."""
    env = {"PATH": os.environ["PATH"], "PYTHON": sys.executable, "PORT": str(port), "HOST": "127.0.0.1"}
    return subprocess.Popen(
        ["sh", str(bundle / "entrypoint.sh")],
        env=env,
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _stop(server: subprocess.Popen[str]) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_push_dry_run_writes_a_bundle_whose_entry_command_serves_wordle(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    result = CliRunner().invoke(app, ["push", "wordle", "--space", "me/wordle", "--dry-run", "--out", str(bundle)])
    assert result.exit_code == 0, result.output
    readme = (bundle / "README.md").read_text()
    assert readme.startswith("---\n") and "sdk: docker\n" in readme and "app_port: 8000\n" in readme
    dockerfile = (bundle / "Dockerfile").read_text()
    assert 'ENV OMNIENV_ALLOW_HOST="me-wordle.hf.space"' in dockerfile and "HEALTHCHECK" in dockerfile
    assert (bundle / "omnienv-src" / "omnienv" / "envs" / "wordle").is_dir()
    assert not list(bundle.rglob("__pycache__"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = _serve_from(bundle, port)
    try:
        wait_healthy(url, server)
        with WebSocketClient.connect(url) as env:
            assert "Wordle" in env.reset("test/0003").text
            assert env.step(ToolCall("guess", {"word": "crane"})).failure is None
        refused = httpx.get(f"{url}/health", headers={"Host": "evil.example"})
        assert refused.status_code == 403  # the Space answers its own host name and loopback, no other
    finally:
        _stop(server)


def test_the_space_host_is_the_hubs_spelling() -> None:
    assert space_host("Me/My_Env.v2") == "me-my-env-v2.hf.space"
    with pytest.raises(DeployError, match="OWNER/NAME"):
        write_space_bundle("wordle", "wordle", Path("/nonexistent"))


def test_each_environment_brings_its_extras_and_system_packages(tmp_path: Path) -> None:
    assert plan_image("wordle").extras == ("server",) and not plan_image("wordle").sandboxed
    jupyter = plan_image("jupyter")
    assert set(jupyter.extras) == {"server", "jupyter"} and jupyter.sandboxed
    desktop = plan_image("desktop")
    assert "desktop" in desktop.extras and {"bubblewrap", "xvfb", "xdotool"} <= set(desktop.system_packages)
    terminal = plan_image("terminal")
    assert terminal.sandboxed and "git" in terminal.system_packages
    assert "gymnasium" in plan_image("gymnasium/FrozenLake-v1").extras
    context = write_context(jupyter, tmp_path / "jupyter")
    dockerfile = (context / "Dockerfile").read_text()
    assert 'org.omnienv.sandbox="bubblewrap"' in dockerfile and 'packages="bubblewrap"' in dockerfile
    pyproject = (context / "omnienv-src" / "pyproject.toml").read_text()
    assert '"ipykernel>=6.29"' in pyproject and '"uvicorn[standard]>=0.35"' in pyproject
    assert "ray" not in pyproject and "playwright" not in pyproject  # only what this image serves


def test_a_harbor_task_folder_goes_into_the_image_and_is_served_from_there(tmp_path: Path) -> None:
    tasks = tmp_path / "my-tasks"
    for name in sorted(p.name for p in SUITE.iterdir() if p.is_dir() and not p.name.startswith("_"))[:2]:
        shutil.copytree(SUITE / name, tasks / name)
    plan = plan_image(str(tasks))
    assert plan.env == "/opt/omnienv/app/tasks/my-tasks" and plan.sandboxed
    context = write_context(plan, tmp_path / "context")
    assert sorted(p.name for p in (context / "app" / "tasks" / "my-tasks").iterdir()) == sorted(
        p.name for p in tasks.iterdir()
    )
    shutil.rmtree(tasks)  # the context holds its own copy, served from the folder it travels in
    port = free_port()
    server = _serve_from(context, port)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", server)
        splits = httpx.get(f"http://127.0.0.1:{port}/splits").json()
    finally:
        _stop(server)
    assert splits["env"] == "my-tasks", splits


def test_a_scaffolded_package_goes_in_as_its_project(tmp_path: Path) -> None:
    made = subprocess.run(
        [OMNIENV, "new", "my-env", "--archetype", "single-turn", "--dir", str(tmp_path)], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stdout + made.stderr
    project = next(p for p in tmp_path.iterdir() if (p / "pyproject.toml").is_file())
    package = next(p for p in project.iterdir() if (p / "env.py").is_file())
    sys.path.insert(0, str(project))
    try:
        target = f"{package.name}.env:{_class_in(package / 'env.py')}"
        plan = plan_image(target)
        assert plan.env == target and plan.projects == (project.name,)
        context = write_context(plan, tmp_path / "context")
    finally:
        sys.path.remove(str(project))
        for name in [m for m in sys.modules if m == package.name or m.startswith(f"{package.name}.")]:
            del sys.modules[name]
    copied = context / "app" / project.name
    kept = {p.relative_to(project) for p in project.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert {p.relative_to(copied) for p in copied.rglob("*") if p.is_file()} == kept  # every file of the project
    assert f"pip install /opt/omnienv/app/{project.name}\n" in (context / "Dockerfile").read_text()


def _class_in(source: Path) -> str:
    for line in source.read_text().splitlines():
        if line.startswith("class ") and ("Environment)" in line or "Environment," in line):
            return line.split()[1].split("(")[0]
    raise AssertionError(f"no Environment class in {source}")


def test_a_context_is_never_written_over_a_folder_that_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(DeployError, match="not a build context"):
        write_context(plan_image("wordle"), tmp_path)
    assert (tmp_path / "precious.txt").read_text() == "keep me"
    result = CliRunner().invoke(app, ["build", "wordle", "--dry-run"])
    assert result.exit_code == 2 and "--context" in result.output


def test_push_uploads_the_bundle_through_huggingface_hubs_own_client(tmp_path: Path) -> None:
    hub = Hub(token="hf_" + "x" * 30)
    with running(hub.app()) as endpoint:
        env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf")}
        command = [OMNIENV, "push", "wordle", "--space", "me/wordle", "--out", str(tmp_path / "bundle")]
        refused = subprocess.run(command, env=env | {"HF_TOKEN": "hf_wrong"}, capture_output=True, text=True)
        pushed = subprocess.run(command, env=env | {"HF_TOKEN": hub.token}, capture_output=True, text=True)
        again = subprocess.run(command, env=env | {"HF_TOKEN": hub.token}, capture_output=True, text=True)
    assert refused.returncode == 2 and "uploading" in refused.stderr and "401" in refused.stderr, refused.stderr
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert again.returncode == 0, again.stdout + again.stderr  # an existing Space is updated, not an error
    assert f"{endpoint}/spaces/me/wordle" in pushed.stdout and not hub.unknown, hub.unknown
    files = hub.spaces["me/wordle"]["files"]
    bundle = tmp_path / "bundle"
    on_disk = {p.relative_to(bundle).as_posix(): p.read_bytes() for p in bundle.rglob("*") if p.is_file()}
    assert files == on_disk and "README.md" in files and "Dockerfile" in files


def test_push_without_a_token_names_the_ways_to_give_one(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HF_TOKEN"} | {"HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run([OMNIENV, "push", "wordle", "--space", "me/wordle"], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "HF_TOKEN" in done.stderr and "--dry-run" in done.stderr, done.stderr
