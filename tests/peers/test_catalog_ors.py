"""The ORS importer against openreward 0.1.167's own server: ``openreward.environments.Server``
serving a Wordle written with openreward's SDK (tests/catalog/ors_wordle_server.py), in openreward's
virtualenv, on 127.0.0.1. The importer runs here, in the main virtualenv, with no openreward. (A
server killed mid-episode is tests/catalog/test_ors_import.py's: what the client sees of a dead
server does not depend on whose it was.) The import is also served again by ``omnienv serve`` and
played over ``/ws`` and through the Gymnasium dialect, against what openreward's own client gets
from the server for the same task and moves (tests/catalog/ors_source_play.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnienv.cli.main import app
from omnienv.client import WebSocketClient
from omnienv.core import ToolCall, check_env, load_environment
from omnienv.dialects.gymnasium import GymnasiumEnv
from omnienv.envs.wordle.solver import next_guess, read_marks
from tests.catalog.servers import free_port, omnienv_server, served
from tests.peerenv import ROOT, peer_python

SCRIPT = ROOT / "tests" / "catalog" / "ors_wordle_server.py"
SOURCE_PLAY = ROOT / "tests" / "catalog" / "ors_source_play.py"
REFUSED = "qqqqq"  # the source script's first move: a word the game refuses
runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    with served([str(peer_python("openreward")), str(SCRIPT), str(port)], port) as running:
        yield f"ors+{running.url}"


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh config directory, so imports.json is this test's own (and its servers')."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config"


def test_openrewards_server_passes_the_contract_checks(server: str) -> None:
    report = check_env(load_environment(server))
    assert report.ok, report.failures


def test_tools_tasks_and_splits_as_the_sdk_declares_them(server: str) -> None:
    cls = load_environment(server)
    assert cls.name == f"ors.{server.split('//')[1].replace(':', '_')}.wordleors"
    assert list(cls.tools) == ["guess", "history"]
    assert cls.tools["guess"].parameters == {
        "type": "object",
        "properties": {"word": {"type": "string", "description": "A five-letter English word."}},
        "required": ["word"],
    }
    assert cls.tools["history"].parameters == {"type": "object", "properties": {}}  # input_schema: null
    assert cls.splits == ("train", "test", "broken")
    tasks = cls.tasks("test")
    assert len(tasks) == 20 and tasks[0].id == "test/00000"  # no ids in the specs: index ids
    assert all(task.data == {"index": i} and task.answer is None for i, task in enumerate(tasks))
    assert cls.server_version == "0.1.167"  # type: ignore[attr-defined]


def test_wordle_is_won_with_the_solvers_guesses(server: str) -> None:
    env = load_environment(server)()
    try:
        assert env.reset(task="test/00005").text.startswith("Play Wordle")
        assert env.step(ToolCall("history", {})).observation.text == "No guesses yet."  # a tool without input
        history: list[tuple[str, str]] = []
        rewards = []
        for _ in range(6):
            result = env.step(ToolCall("guess", {"word": next_guess(history)}))
            assert result.failure is None, result.failure
            rewards.append(result.reward)
            marks = read_marks(result.observation.text)
            if marks is not None:
                history.append(marks)
            if result.over:
                break
        assert result.done and "Correct!" in result.observation.text
        assert rewards == [0.0] * (len(rewards) - 1) + [1.0]
    finally:
        env.close()


def test_a_tool_raising_on_the_server_is_a_flagged_failure(server: str) -> None:
    env = load_environment(server)()
    try:
        env.reset(task="broken/00000")
        result = env.step(ToolCall("guess", {"word": "slate"}))
        assert result.failure is not None and result.failure.kind == "env_error"
        assert "the game's server-side bug" in result.failure.message
        assert result.reward == 0.0 and result.over
    finally:
        env.close()


def solve(step: Callable[[str], tuple[str, float, bool, bool]]) -> list[dict[str, Any]]:
    """The source script's game through ``step`` (word -> text, reward, done, truncated): the refused
    word, then the solver reading each answer, until the episode is over."""
    moves: list[dict[str, Any]] = []
    history: list[tuple[str, str]] = []
    for _ in range(8):
        word = REFUSED if not moves else next_guess(history)
        text, reward, done, truncated = step(word)
        moves.append({"word": word, "reward": reward, "finished": done, "truncated": truncated})
        marks = read_marks(text)
        if marks is not None:
            history.append(marks)
        if done or truncated:
            break
    return moves


def test_served_by_omnienv_and_through_gymnasium_it_scores_what_the_source_does(server: str, config_home: Path) -> None:
    """Task test/00005 played three ways: by openreward's own client on its server (the source),
    over /ws from ``omnienv serve`` of the imported name, and through Gymnasium's API in-process.
    Each reads the answers with the solver, so the same moves and rewards mean each path passed on
    the game's texts, rewards and ending as the server gave them."""
    url = server.removeprefix("ors+")
    command = [str(peer_python("openreward")), str(SOURCE_PLAY), url, "wordleors", "test", "5"]
    source = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:  # openreward's client takes seconds to import: it plays while omnienv's server starts
        imported = runner.invoke(app, ["import", "ors", url, "--name", "ors-wordle"])
        assert imported.exit_code == 0, imported.output
        serve_command, port = omnienv_server("ors-wordle")
        with served(serve_command, port) as running, WebSocketClient(running.url) as env:
            assert env.reset(task="test/00005").text.startswith("Play Wordle")

            def over_ws(word: str) -> tuple[str, float, bool, bool]:
                result = env.step(ToolCall("guess", {"word": word}))
                assert result.failure is None, result.failure
                return result.observation.text, result.reward, result.done, result.truncated

            ws = solve(over_ws)
            assert env.state().reward == pytest.approx(sum(move["reward"] for move in ws))
            assert env.state().done

        gym_env = GymnasiumEnv("ors-wordle")
        try:
            obs, _ = gym_env.reset(options={"task": "test/00005"})
            assert str(obs).startswith("Play Wordle")

            def through_gymnasium(word: str) -> tuple[str, float, bool, bool]:
                call = json.dumps({"name": "guess", "arguments": {"word": word}})  # no tags: Hermes JSON
                obs, reward, terminated, truncated, _ = gym_env.step(f"<tool_call>{call}</tool_call>")
                return str(obs), float(reward), bool(terminated), bool(truncated)

            gym = solve(through_gymnasium)
        finally:
            gym_env.close()
        out, err = source.communicate(timeout=180)
    finally:
        if source.poll() is None:
            source.kill()
            source.communicate()
    assert source.returncode == 0, f"{SOURCE_PLAY.name} failed:\n{out[-3000:]}\n{err[-3000:]}"
    played = json.loads(out.strip().splitlines()[-1])
    # a reward of null counts 0 (docs/catalog.md); the server never truncates
    truth = [
        {"word": move["word"], "reward": move["reward"] or 0.0, "finished": move["finished"], "truncated": False}
        for move in played["moves"]
    ]
    assert truth[-1]["finished"] and truth[-1]["reward"] == 1.0 and len(truth) > 2  # refused, guesses, a win
    assert ws == truth
    assert gym == truth
