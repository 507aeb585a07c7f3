"""``omnienv serve ENV --ray ADDRESS``: a real server process joining the test's Ray instance."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import ray
from typer.testing import CliRunner

from omnienv.cli.main import app as cli
from omnienv.client import WebSocketClient
from omnienv.core import ToolCall
from omnienv.envs.wordle import Wordle
from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.ray.placement import actor_options
from tests.net import free_port
from tests.polling import eventually, wait_healthy

pytestmark = pytest.mark.usefixtures("ray_local")
OMNIENV = str(Path(sys.executable).with_name("omnienv"))


@pytest.mark.parametrize(
    ("flags", "route"), [([], "over each actor's own connection"), (["--ray-calls"], "through Ray's actor calls")]
)
def test_serve_ray_joins_a_cluster_and_plays_wordle_on_its_actors(flags: list[str], route: str) -> None:
    address = ray.get_runtime_context().gcs_address
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        OMNIENV,
        "serve",
        "wordle",
        "--port",
        str(port),
        "--ray",
        address,
        "--ray-actors",
        "2",
        "--ray-cpus",
        "0.5",
        "--no-ui",
        *flags,
    ]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_healthy(url, process, 120)
        client = WebSocketClient.connect(url)
        try:
            client.reset(seed=11)
            history: list[tuple[str, str]] = []
            for _ in range(6):
                result = client.step(ToolCall("guess", {"word": next_guess(history)}))
                history.append(read_marks(result.observation.text))  # type: ignore[arg-type]
                if result.done:
                    break
            assert "Correct!" in result.observation.text
        finally:
            client.close()
        assert ray.available_resources().get("CPU", 0) <= 1.0  # its two actors hold 2 x 0.5 CPU
    finally:
        process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
    assert process.returncode in (0, 130), err  # uvicorn re-raises the SIGINT it handled
    assert "2 Ray actor(s)" in out and f"calls go {route}" in out.replace("\n", " ")
    eventually(lambda: ray.available_resources().get("CPU", 0) == 2.0, 20)  # its actors are gone


def test_ray_flag_takes_an_address(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake(cls: Any, config: Any, host: str, port: int, **kw: Any) -> None:
        seen.update(kw, env=cls.name)

    monkeypatch.setattr("omnienv.ray.serving.serve_on_ray", fake)
    args = ["serve", "wordle", "--ray", "local", "--ray-actors", "3", "--port", "9"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert seen["address"] == "local" and seen["actors"] == 3 and seen["actor_options"] == {}
    assert seen["direct"] is True
    result = CliRunner().invoke(cli, [*args, "--ray-calls"])
    assert result.exit_code == 0 and seen["direct"] is False
    result = CliRunner().invoke(cli, ["serve", "wordle", "--port", "9", "--ray", "auto"])
    assert result.exit_code == 0 and seen["address"] == "auto" and seen["actors"] is None


def test_a_cluster_that_cannot_be_joined_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(address: str | None = None, **options: Any) -> None:
        raise ConnectionError("Could not find any running Ray instance.")

    monkeypatch.setattr("omnienv.ray.serving.connect", refuse)
    result = CliRunner().invoke(cli, ["serve", "wordle", "--port", "9", "--ray", "auto"])
    assert result.exit_code == 2
    assert "cannot join the Ray cluster at 'auto'" in result.output and "--ray local" in result.output


def test_an_actors_cpus_come_from_the_class_unless_the_command_line_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/ray.md: a class's ``ray_options`` set each actor's requests, and ``--ray-cpus`` wins."""
    seen: dict[str, Any] = {}
    monkeypatch.setattr("omnienv.ray.serving.serve_on_ray", lambda *_, **kw: seen.update(kw))
    monkeypatch.setattr(Wordle, "ray_options", {"num_cpus": 0.25, "memory": 1 << 30}, raising=False)
    args = ["serve", "wordle", "--ray", "local", "--port", "9"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    asked = actor_options(Wordle, seen["actor_options"])
    assert asked["num_cpus"] == 0.25 and asked["memory"] == 1 << 30
    assert CliRunner().invoke(cli, [*args, "--ray-cpus", "2"]).exit_code == 0
    asked = actor_options(Wordle, seen["actor_options"])
    assert asked["num_cpus"] == 2.0 and asked["memory"] == 1 << 30
    monkeypatch.delattr(Wordle, "ray_options")
    assert CliRunner().invoke(cli, args).exit_code == 0
    assert actor_options(Wordle, seen["actor_options"])["num_cpus"] == 1  # neither says: one CPU
