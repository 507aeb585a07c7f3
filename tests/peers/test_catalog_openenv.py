"""The catalog's OpenEnv importers, with OpenEnv 0.10.0's real package and server.

In-process (``openenv/<module>:<Class>``), in OpenEnv's own virtualenv: the script
``tests/catalog/openenv_checks.py`` loads the OpenEnv environments of
``tests/catalog/openenv_envs.py`` (an MCP one, a plain-Action one, a raising one) and reports the
contract checks, the tools, scripted episodes, a flagged failure, an episode over ``/ws`` (our
server, our client) and one through the TRL dialect.

By URL (``openenv+http://...``), here in the main virtualenv, which has no openenv: OpenEnv's own
server app for those environments runs under uvicorn on 127.0.0.1 in OpenEnv's virtualenv (started
first, so it boots while the script runs), and is checked, played, and played through omnienv's
Gymnasium dialect; ``omnienv import openenv`` names it for the other commands.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnienv.catalog import MissingLibraryError
from omnienv.cli.main import app
from omnienv.core import ToolCall, UnknownEnvironmentError, check_env, load_environment
from tests.net import free_port, healthy
from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind, run_json

SCRIPT = ROOT / "tests" / "catalog" / "openenv_checks.py"
START_DEADLINE_S = 90.0
runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def peer() -> Iterator[tuple[list[dict[str, Any]], str]]:
    """The script's lines, and the base URL of OpenEnv's server (reaped after the module)."""
    python = peer_python("openenv")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(python), "-m", "uvicorn", "tests.catalog.openenv_envs:app", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--log-level", "warning"]
    with tempfile.TemporaryDirectory(prefix="omnienv-openenv-import-") as tmp:
        log = Path(tmp) / "server.log"
        with open(log, "ab") as out:
            server = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            lines = run_json(python, SCRIPT, timeout=180)
            deadline = time.monotonic() + START_DEADLINE_S
            while not healthy(url, "/echo/health"):
                if server.poll() is not None:
                    pytest.fail(f"OpenEnv's server exited with {server.returncode}:\n{log.read_text()[-3000:]}")
                if time.monotonic() > deadline:
                    pytest.fail(f"OpenEnv's server not healthy within {START_DEADLINE_S} s:\n{log.read_text()[-3000:]}")
                time.sleep(0.05)
            yield lines, url
        finally:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGTERM)
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
                    server.wait(timeout=10)


@pytest.fixture
def lines(peer: tuple[list[dict[str, Any]], str]) -> list[dict[str, Any]]:
    return peer[0]


@pytest.fixture
def server(peer: tuple[list[dict[str, Any]], str]) -> str:
    return peer[1]


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh config directory, so imports.json is this test's own."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path


# -- in-process, in OpenEnv's virtualenv -------------------------------------------------------


def test_openenv_classes_pass_the_contract_checks(lines: list[dict[str, Any]]) -> None:
    checks = by_kind(lines, "check")
    assert len(checks) == 2
    assert all(check["ok"] for check in checks), checks


def test_mcp_tools_and_the_action_model_become_omnienv_tools(lines: list[dict[str, Any]]) -> None:
    tools = {line["name"].split(":")[1]: line["tools"] for line in by_kind(lines, "tools")}
    echo, guess = tools["EchoGame"], tools["GuessNumber"]
    assert sorted(echo) == ["echo", "shout"]
    assert echo["shout"]["description"] == "Echo a message back in capitals, repeated."
    assert echo["shout"]["required"] == ["message"] and echo["shout"]["properties"]["times"]["default"] == 1
    assert list(guess) == ["act"] and guess["act"]["description"] == "Guess the hidden number."
    # the Action's fields, its bookkeeping ``metadata`` left out
    assert guess["act"]["properties"] == {
        "guess": {"description": "A number from 1 to 20.", "maximum": 20, "minimum": 1, "type": "integer"}
    }


def test_an_mcp_episode_is_scored_by_the_environment(lines: list[dict[str, Any]]) -> None:
    (echo,) = by_kind(lines, "echo")
    assert re.fullmatch(r"Use the echo tool to say the word '\w+'\.", echo["prompt"])  # metadata["message"]
    assert echo["wrong"] == ["not it", 0.0, False]
    # a tool that raises inside OpenEnv is the agent's mistake (an MCP error), not a failure
    assert echo["bad"] == [True, "Error calling tool 'shout': times must be at least 1", True, False]
    is_error, text, no_failure = echo["schema"]
    assert is_error and no_failure and "times" in text and "integer" in text
    assert echo["loud"] == "HI"  # the optional argument left out, its default applied by the tool
    assert echo["won"][1:] == [1.0, True, 1.0]


def test_a_plain_action_episode_hides_metadata_and_is_won(lines: list[dict[str, Any]]) -> None:
    (guess,) = by_kind(lines, "guess")
    assert guess["prompt"] == "I picked a number between 1 and 20."  # metadata holds the answer: not shown
    is_error, text, no_failure = guess["out_of_range"]
    assert is_error and no_failure and "maximum of 20" in text
    assert guess["reward"] == 1.0 and guess["done"] and guess["steps"] == guess["guesses"] + 1


def test_a_raising_openenv_environment_is_a_flagged_failure(lines: list[dict[str, Any]]) -> None:
    (broken,) = by_kind(lines, "broken")
    assert broken["failure"] == "env_error" and "the environment's own bug" in broken["message"]
    assert broken["reward"] == 0.0 and broken["over"] and broken["again"] == "Make a move."
    (served,) = by_kind(lines, "ws_broken")
    assert served == {"kind": "ws_broken", "failure": "env_error", "again": "Make a move."}


def test_an_episode_over_ws_and_through_the_trl_dialect(lines: list[dict[str, Any]]) -> None:
    (ws,) = by_kind(lines, "ws")
    assert ws["tools"] == ["act"] and ws["prompt"] and ws["reward"] == 1.0 and ws["done"]
    (dialect,) = by_kind(lines, "dialect")
    assert dialect == {"kind": "dialect", "api": "trl", "tools": ["echo", "shout"], "shout": "HEY HEY", "reward": 1.0}


# -- by URL, in the main virtualenv (no openenv here) -------------------------------------------


def test_a_class_name_without_openenv_names_the_extra() -> None:
    with pytest.raises(MissingLibraryError, match=r"pip install 'omnienv\[openenv\]'"):
        load_environment("openenv/tests.catalog.openenv_envs:GuessNumber")


def test_an_openenv_server_by_url_passes_the_checks(server: str) -> None:
    for path in ("echo", "guess"):
        report = check_env(load_environment(f"openenv+{server}/{path}"))
        assert report.ok, report.failures


def test_an_openenv_server_is_played_by_url_and_through_gymnasium(server: str) -> None:
    from omnienv.dialects.gymnasium import GymnasiumEnv

    echo = load_environment(f"openenv+{server}/echo")
    assert sorted(echo.tools) == ["echo", "shout"]
    env = echo()
    word = re.search(r"'(\w+)'", env.reset(task="test/00001").text).group(1)  # type: ignore[union-attr]
    assert env.step(ToolCall("shout", {"message": "a", "times": 0})).observation.is_error
    won = env.step(ToolCall("echo", {"message": word}))
    assert (won.reward, won.done, won.failure) == (1.0, True, None)
    env.close()

    gym_env = GymnasiumEnv(f"openenv+{server}/guess")
    obs, _ = gym_env.reset(seed=3)
    assert obs == "I picked a number between 1 and 20."
    low, high, reward, terminated = 1, 20, 0.0, False
    for _ in range(8):
        guess = (low + high) // 2
        call = json.dumps({"name": "act", "arguments": {"guess": guess}})
        obs, reward, terminated, _, _ = gym_env.step(f"<tool_call>{call}</tool_call>")
        if terminated:
            break
        low, high = (guess + 1, high) if "higher" in str(obs) else (low, guess - 1)
    assert terminated and reward == 1.0
    gym_env.close()


def test_omnienv_import_names_a_server_for_every_command(server: str, config_home: Path) -> None:
    result = runner.invoke(app, ["import", "openenv", f"{server}/echo", "--name", "echo-game"])
    assert result.exit_code == 0, result.output
    saved = json.loads((config_home / "omnienv" / "imports.json").read_text())
    assert saved == {"imports": {"echo-game": {"source": "openenv", "target": f"openenv+{server}/echo"}}}
    listed = runner.invoke(app, ["list", "--json", "--source", "openenv"])
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.output)
    assert (row["name"], row["kind"], row["description"]) == ("echo-game", "imported", f"openenv+{server}/echo")
    checked = runner.invoke(app, ["check", "echo-game"])
    assert checked.exit_code == 0, checked.output
    assert sorted(load_environment("echo-game").tools) == ["echo", "shout"]
    assert runner.invoke(app, ["import", "remove", "echo-game"]).exit_code == 0
    with pytest.raises(UnknownEnvironmentError):
        load_environment("echo-game-unregistered")


def test_a_server_that_is_not_there_is_a_clear_error() -> None:
    port = free_port()  # nothing listens here
    with pytest.raises(UnknownEnvironmentError, match="cannot reach the OpenEnv server"):
        load_environment(f"openenv+http://127.0.0.1:{port}")
    result = runner.invoke(app, ["import", "openenv", f"http://127.0.0.1:{port}", "--name", "gone"])
    assert result.exit_code == 2 and "cannot reach" in result.output
