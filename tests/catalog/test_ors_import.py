"""The ORS importer (``ors+http://...``) against omnienv's own ORS routes: ``omnienv serve wordle``
in a subprocess on 127.0.0.1. tests/peers/test_catalog_ors.py runs it against openreward's own
server too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnienv.catalog.ors import OrsEnvironment, _distinct_across_splits, is_ors_url, outcome
from omnienv.cli.main import app
from omnienv.core import (
    EnvironmentFailure,
    Task,
    ToolCall,
    ToolError,
    UnknownEnvironmentError,
    check_env,
    load_environment,
)
from omnienv.core.split_check import splits_are_disjoint
from omnienv.envs.wordle import Wordle
from omnienv.envs.wordle.solver import next_guess, read_marks
from tests.catalog.servers import free_port, omnienv_server, served

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    command, port = omnienv_server("wordle")
    with served(command, port) as running:
        yield f"ors+{running.url}"


def play(env: object, task: str) -> tuple[list[float], list[str], bool]:
    """The solver's game on ``task``: each step's reward, each step's text, whether it ended."""
    observation = env.reset(task=task)  # type: ignore[attr-defined]
    assert "Wordle" in observation.text
    history: list[tuple[str, str]] = []
    rewards, texts = [], []
    for _ in range(8):
        result = env.step(ToolCall("guess", {"word": next_guess(history)}))  # type: ignore[attr-defined]
        assert result.failure is None, result.failure
        rewards.append(result.reward)
        texts.append(result.observation.text)
        marks = read_marks(result.observation.text)
        if marks is not None:
            history.append(marks)
        if result.over:
            return rewards, texts, result.done
    return rewards, texts, False


def test_the_imported_server_passes_the_contract_checks(server: str) -> None:
    report = check_env(load_environment(server))
    assert report.ok, report.failures


def test_tools_splits_and_tasks_come_from_the_server(server: str) -> None:
    cls = load_environment(server)
    assert list(cls.tools) == ["guess", "get_history"]
    guess = cls.tools["guess"]
    assert guess.description == "Guess the hidden word." and guess.parameters["required"] == ["word"]
    assert cls.splits == ("train", "test")
    tasks = cls.tasks("test")
    assert [task.id for task in tasks] == [task.id for task in Wordle.tasks("test")]  # the server's own ids
    assert tasks[3].data == {"index": 3} and tasks[3].answer is None  # the spec (and answer) stay there
    assert cls.server_version  # type: ignore[attr-defined]


def test_wordle_is_won_with_the_solvers_guesses(server: str) -> None:
    env = load_environment(server)()
    try:
        rewards, texts, done = play(env, "test/0003")
        assert done and "Correct!" in texts[-1]
        assert rewards[:-1] == [0.0] * (len(rewards) - 1)
        assert rewards[-1] == pytest.approx(1.0 + 0.5 * (1 - len(rewards) / 6))  # the server's rubric
        assert env.episode_reward == pytest.approx(rewards[-1])
    finally:
        env.close()


def test_the_agents_mistakes_are_error_observations(server: str) -> None:
    env = load_environment(server)()
    try:
        env.reset(task="test/0001")
        refused = env.step(ToolCall("guess", {"word": "qqqqq"}))  # the server's ToolError
        assert refused.observation.is_error and "not in the word list" in refused.observation.text
        assert refused.failure is None and not refused.over
        wrong = env.step(ToolCall("guess", {"wrd": "crane"}))  # checked here against the schema
        assert wrong.observation.is_error and "wrd" in wrong.observation.text and wrong.failure is None
        history = env.step(ToolCall("get_history", {}))
        assert "Guesses used: 0/6" in history.observation.text
    finally:
        env.close()


def test_the_servers_turn_limit_is_truncation(server: str) -> None:
    env = load_environment(server)()
    try:
        env.reset(task="test/0004")
        results = [env.step(ToolCall("get_history", {})) for _ in range(Wordle.max_turns or 0)]
        assert not any(result.over for result in results[:-1])
        last = results[-1]  # the server's Wordle allows 12 turns: cut short there, not won or lost
        assert last.truncated and not last.done and last.failure is None
        assert env.state().truncated and not env.state().done
    finally:
        env.close()


def test_a_server_killed_mid_episode_is_a_flagged_failure() -> None:
    command, port = omnienv_server("wordle")
    with served(command, port) as running:
        env = load_environment(f"ors+{running.url}")()
        try:
            env.reset(task="test/0002")
            first = env.step(ToolCall("guess", {"word": "slate"}))
            assert first.failure is None and not first.over
            running.kill()
            lost = env.step(ToolCall("guess", {"word": "crane"}))
            assert lost.failure is not None and lost.failure.kind == "env_error"
            assert "ORS server" in lost.failure.message
            assert lost.reward == 0.0 and lost.over and env.state().failure == lost.failure
            with pytest.raises(EnvironmentFailure, match="setup failed"):
                env.reset(task="test/0002")
        finally:
            env.close()  # the session cannot be deleted any more: closing still succeeds


def test_a_server_that_is_not_there_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens here
    with pytest.raises(UnknownEnvironmentError, match="cannot read the ORS server"):
        load_environment(f"ors+{url}")
    result = runner.invoke(app, ["import", "ors", url, "--name", "gone"])
    assert result.exit_code == 2 and "cannot read the ORS server" in result.output


def test_omnienv_import_ors_names_it_for_every_command(server: str, config_home: Path) -> None:
    url = server.removeprefix("ors+")
    result = runner.invoke(app, ["import", "ors", url, "--name", "word-game", "--env", "wordle"])
    assert result.exit_code == 0, result.output
    saved = json.loads((config_home / "omnienv" / "imports.json").read_text())
    record = saved["imports"]["word-game"]
    assert record["source"] == "ors" and record["target"] == f"{server}#wordle" and record["version"]
    listed = runner.invoke(app, ["list", "--json", "--source", "ors"])
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.output)
    assert (row["name"], row["source"], row["kind"], row["version"]) == ("word-game", "ors", "imported", "0.1.0")
    assert row["offline"]  # a server on 127.0.0.1
    checked = runner.invoke(app, ["check", "word-game"])
    assert checked.exit_code == 0, checked.output
    assert list(load_environment("word-game").tools) == ["guess", "get_history"]
    assert runner.invoke(app, ["import", "remove", "word-game"]).exit_code == 0
    unknown = runner.invoke(app, ["import", "ors", url, "--name", "other", "--env", "chess"])
    assert unknown.exit_code == 2 and "serves ['wordle'], not 'chess'" in unknown.output


def test_urls_are_told_apart() -> None:
    assert is_ors_url("ors+http://127.0.0.1:8000") and is_ors_url("ors+https://h.example/prefix#wordle")
    assert (
        not is_ors_url("http://127.0.0.1:8000") and not is_ors_url("ors+ws://h") and not is_ors_url("ors+http://h#a b")
    )
    with pytest.raises(UnknownEnvironmentError):
        load_environment("ors+ftp://h")


def test_replies_map_to_results_mistakes_and_failures() -> None:
    text = [{"type": "text", "text": "ok", "detail": None}]
    done, cut = outcome({"ok": True, "output": {"blocks": text, "metadata": None, "reward": None, "finished": True}})
    assert (done.reward, done.done, done.content[0].text, cut) == (0.0, True, "ok", False)  # type: ignore[union-attr]
    truncated = {"done": False, "truncated": True, "is_error": False}  # an omnienv server's turn limit
    result, cut = outcome(
        {"ok": True, "output": {"blocks": text, "metadata": truncated, "reward": 0.0, "finished": True}}
    )
    assert not result.done and cut
    with pytest.raises(ToolError, match="bad word"):
        outcome({"ok": False, "error": "bad word", "reason": "input_validation"})
    with pytest.raises(EnvironmentFailure, match="episode_finished"):
        outcome({"ok": False, "error": "over", "reason": "episode_finished"})
    voided = {"blocks": [], "metadata": {"failure": {"kind": "env_error", "message": "boom"}}, "finished": True}
    with pytest.raises(EnvironmentFailure, match="boom"):
        outcome({"ok": True, "output": voided})
    with pytest.raises(EnvironmentFailure, match="without blocks"):
        outcome({"ok": True, "output": {"reward": 1.0}})


def test_ids_a_server_repeats_across_splits_are_named_by_their_split() -> None:
    """ORS ids need be unique only within a split; an omnienv id names one task, and check_env
    fails one filed under two splits (as a task leaking from train into test would be)."""
    listed = {
        "train": (Task("a", "train", {"index": 0}), Task("b", "train", {"index": 1})),
        "test": (Task("a", "test", {"index": 0}),),
    }
    renamed = _distinct_across_splits(listed)
    assert [task.id for task in renamed["train"]] == ["train/a", "train/b"]
    assert renamed["test"] == (Task("test/a", "test", {"index": 0}),)  # still opened by split and index

    def imported(tasks: dict[str, tuple[Task, ...]]) -> type[OrsEnvironment]:
        return type("Repeating", (OrsEnvironment,), {"split_tasks": tasks, "splits": tuple(tasks)})

    assert "task ids in two splits ('a' is in train and test)" in (splits_are_disjoint(imported(listed)) or "")
    assert splits_are_disjoint(imported(renamed)) is None
    unique = {"train": (Task("a", "train"),), "test": (Task("b", "test"),)}
    assert _distinct_across_splits(unique) is unique  # a server's own ids are kept where they can be
