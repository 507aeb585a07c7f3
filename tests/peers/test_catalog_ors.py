"""The ORS importer against openreward 0.1.167's own server: ``openreward.environments.Server``
serving a Wordle written with openreward's SDK (tests/catalog/ors_wordle_server.py), in openreward's
virtualenv, on 127.0.0.1. The importer runs here, in the main virtualenv, with no openreward. (A
server killed mid-episode is tests/catalog/test_ors_import.py's: what the client sees of a dead
server does not depend on whose it was.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from omnienv.core import ToolCall, check_env, load_environment
from omnienv.envs.wordle.solver import next_guess, read_marks
from tests.catalog.servers import free_port, served
from tests.peerenv import ROOT, peer_python

SCRIPT = ROOT / "tests" / "catalog" / "ors_wordle_server.py"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    with served([str(peer_python("openreward")), str(SCRIPT), str(port)], port) as running:
        yield f"ors+{running.url}"


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
