"""Options a user can get wrong end in a usage error naming the fix, never a traceback, a wrong
port or a run that says it succeeded; ``--port 0`` servers name the port they got."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from omnienv.cli.main import app
from tests.cli.serving import CLI, started
from tests.polling import eventually

runner = CliRunner(env={"COLUMNS": "200"})
CLOSED = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
ANNOUNCED = re.compile(r"(?:at|on) (http://127\.0\.0\.1:(\d+))[/ ]")


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["serve", "wordle", "--port", "70000"], "70000 is not in the range 0<=x<=65535"),
        (["view", "missing.jsonl", "--port", "-5"], "-5 is not in the range 0<=x<=65535"),
        (["proxy", "--upstream", CLOSED, "--port", "70000"], "70000 is not in the range"),
        (["serve", "wordle", "--log-level", "loud"], "'loud' is not one of critical, error, warning, info"),
        (["eval", "wordle", "--model", "m", "--retries", "-1"], "-1 is not in the range x>=0"),
        (["rollout", "wordle", "--deadline", "0"], "0.0 is not in the range x>=0.001"),
        (["proxy", "--upstream", "http://"], "the upstream must be an http(s) URL, got 'http://'"),
        (["proxy", "--upstream", CLOSED, "--host", "nosuch.invalid"], "cannot listen on nosuch.invalid:8100"),
        (["rollout", "wordle", "--policy", "json:JSONDecoder"], "'json:JSONDecoder' is not a policy"),
    ],
)
def test_a_bad_option_is_a_usage_error_naming_it(args: list[str], said: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.output.replace("│", " ").split()), result.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["play", "wordle", "--task", "test/99999"], "error: no task 'test/99999' in split 'test' of wordle"),
        (["rollout", "wordle", "--episodes", "1", "--url", "http//x"], "expected a server URL like http://127.0"),
        (["rollout", "wordle", "--episodes", "1", "--out", "."], "error: .: Is a directory"),
    ],
)
def test_an_omnienv_error_or_a_bad_path_ends_the_command_plainly(tmp_path: Path, args: list[str], said: str) -> None:
    result = run([*CLI, *args], tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert said in result.stderr and "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["wordle2"], "error: no environment named 'wordle2'. Did you mean 'wordle'?"),
        (["wordle", "--port", "70000"], "'70000' is not a TCP port (0 to 65535"),
        (["wordle", "--log-level", "loud"], "invalid choice: 'loud'"),
    ],
)
def test_the_lean_server_entry_point_refuses_bad_input_plainly(tmp_path: Path, args: list[str], said: str) -> None:
    result = run([sys.executable, "-m", "omnienv.app", *args], tmp_path)
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_an_eval_whose_every_episode_failed_exits_1_with_the_reason(tmp_path: Path) -> None:
    """The model unreachable: nothing was scored, so the command failed, and says why."""
    args = ["eval", "wordle", "--model", "m", "--base-url", CLOSED, "--episodes", "2", "--retries", "0"]
    result = run([*CLI, *args, "--out", str(tmp_path / "e.jsonl")], tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    said = " ".join(result.stderr.split())
    assert "error: every episode failed, none is scored (the first: model:" in said and "Connection" in said, said


@pytest.mark.parametrize("command", ["serve", "view"])
def test_port_0_servers_name_the_port_they_got(tmp_path: Path, command: str) -> None:
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text('{"env": "wordle", "steps": []}\nnot json\n')
    target = "wordle" if command == "serve" else str(trajectories)
    log = tmp_path / "server.log"
    with started([command, target, "--port", "0"], log) as server:

        def announced() -> bool:
            assert server.poll() is None, log.read_text()
            return re.search(ANNOUNCED, log.read_text()) is not None

        eventually(announced, timeout=60.0, what="the start-up announcement")
        found = re.search(ANNOUNCED, log.read_text())
        assert found is not None
        url, port = found.group(1), found.group(2)
        assert port != "0" and httpx.get(f"{url}/health" if command == "serve" else url, timeout=10).status_code < 400
        if command == "view":  # a line that is no episode is said, not dropped silently
            said = " ".join(log.read_text().split())
            assert "1 line(s) skipped, not episodes (line 2:" in said, said
