from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from omnienv.cli.main import app
from omnienv.cli.play import parse_call
from omnienv.envs.wordle import Wordle
from tests.cli.serving import started
from tests.net import free_port
from tests.polling import eventually

runner = CliRunner(env={"COLUMNS": "200"})


def test_list_shows_wordle_with_its_splits() -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    assert "wordle" in result.output and "guess" in result.output and "test (432)" in result.output


def test_check_passes_on_wordle_and_names_unknown_envs() -> None:
    result = runner.invoke(app, ["check", "wordle"])
    assert result.exit_code == 0, result.output
    assert "all checks passed" in result.output
    unknown = runner.invoke(app, ["check", "wordel"])
    assert unknown.exit_code == 2
    assert "Did you mean 'wordle'?" in unknown.output


def test_rollout_acceptance_command(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    command = [
        sys.executable,
        "-m",
        "omnienv.cli.main",
        "rollout",
        "wordle",
        "--policy",
        "solver",
        "--episodes",
        "200",
        "--split",
        "test",
        "--out",
        str(out),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "win rate" in result.stdout
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert len(records) == 200
    assert sum(r["success"] is True for r in records) / len(records) >= 0.99


def test_rollout_rejects_unknown_policy_and_split() -> None:
    bad_policy = runner.invoke(app, ["rollout", "wordle", "--policy", "solvr"])
    assert bad_policy.exit_code == 2 and "Did you mean 'solver'?" in bad_policy.output
    bad_split = runner.invoke(app, ["rollout", "wordle", "--split", "dev"])
    assert bad_split.exit_code == 2 and "splits: train, test" in bad_split.output


def test_play_a_game_in_the_terminal() -> None:
    answer = Wordle.task_index().find("test/0000", "test").answer
    keystrokes = f"guess wrod=x\nget_history\n:state\nguess {answer}\n"
    result = runner.invoke(app, ["play", "wordle", "--task", "test/0000"], input=keystrokes)
    assert result.exit_code == 0, result.output
    assert "did you mean 'word'?" in result.output
    assert "Correct! Solved in 1 guesses." in result.output
    assert "Episode done. Total reward 1.4167" in result.output


def test_parse_call_forms() -> None:
    tools = Wordle.tools
    assert parse_call("guess crane", tools).arguments == {"word": "crane"}
    assert parse_call('{"name": "guess", "arguments": {"word": "slate"}}', tools).arguments == {"word": "slate"}
    assert parse_call("get_history", tools).name == "get_history"
    assert parse_call("guess word=crane", tools).arguments == {"word": "crane"}


def test_serve_nemo_gym_announces_only_the_routes_it_serves(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with started(["serve", "wordle", "--nemo-gym", "--port", str(port)], log) as server:

        def announced() -> bool:
            assert server.poll() is None, log.read_text()
            return "point its agents at" in log.read_text()

        eventually(announced, timeout=60.0, what="the start-up announcement")
        output = " ".join(log.read_text().split())
        assert f"serving wordle on {url}" in output
        with httpx.Client(base_url=url, timeout=10.0) as client:
            assert client.post("/seed_session", json={}).status_code == 200
            assert client.get("/ws").status_code == 404 and client.get("/ui/").status_code == 404
        # Whatever the announcement names must be there: no WebSocket and no play page on this server.
        assert not re.search(r"/ws\b|/ui\b", output), output


def test_the_quickstart_demo_serves_wordle_and_the_solver_wins_over_the_websocket(tmp_path: Path) -> None:
    """``make demo`` runs ``omnienv demo``: a real server on a free local port, the solver over /ws."""
    out = tmp_path / "demo.jsonl"
    command = [sys.executable, "-m", "omnienv.cli.main", "demo", "--episodes", "8", "--concurrency", "4"]
    env = {**os.environ, "COLUMNS": "200"}  # one line per message
    result = subprocess.run(
        [*command, "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    served = re.search(r"serving wordle at (http://127\.0\.0\.1:\d+) \(WebSocket ws://[\d.:]+/ws\)", result.stdout)
    assert served, result.stdout
    assert "win rate" in result.stdout
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert len(records) == 8 and all(r["success"] is True and r["failure"] is None for r in records)
    with pytest.raises(httpx.TransportError):  # the demo's server stopped with it
        httpx.get(f"{served.group(1)}/health", timeout=5)


@pytest.mark.parametrize("serve", [["omnienv.cli.main", "serve"], ["omnienv.app"]], ids=["omnienv-serve", "app"])
def test_serve_without_a_routes_dependency_names_the_extra_instead_of_a_traceback(
    tmp_path: Path, serve: list[str]
) -> None:
    """The dialects' routes import their own packages as the app is assembled (NeMo Gym's signed
    cookie needs itsdangerous): one missing is the server extra missing, said as such, by
    ``omnienv serve`` and by the lean ``python -m omnienv.app`` alike."""
    (tmp_path / "itsdangerous.py").write_text("raise ImportError(\"No module named 'itsdangerous'\")\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "200"}
    command = [sys.executable, "-m", *serve, "wordle", "--port", str(free_port())]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "serving needs the server extra: pip install 'omnienv[server]'" in result.stderr, result.stderr
    assert "itsdangerous" in result.stderr and "Traceback" not in result.stderr, result.stderr
