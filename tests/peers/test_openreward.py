"""openreward 0.1.167's own client (``OpenReward(...).environments.get(name, base_url=URL)``) on our server.

Our server runs here, in the main virtualenv; the script (``tests/peers/openreward/play_wordle.py``)
runs in openreward's own virtualenv, lists tasks, opens sessions and wins Wordle with the solver.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from omnienv.app import create_app
from omnienv.envs.wordle import Wordle
from omnienv.server import running
from tests.peerenv import PEERS, ROOT, peer_python
from tests.peers._run import by_kind, run_json


@pytest.fixture(scope="module")
def outcome() -> Iterator[tuple[list[dict[str, Any]], int]]:
    python = peer_python("openreward")
    app = create_app(Wordle)
    with pytest.MonkeyPatch.context() as patch, running(app) as url:
        patch.setenv("OMNIENV_URL", url)
        lines = run_json(python, PEERS / "openreward" / "play_wordle.py", timeout=180)
        yield lines, app.state.manager.active


def test_lists_tasks_without_answers_and_splits(outcome: tuple[list[dict[str, Any]], int]) -> None:
    lines, _ = outcome
    (tasks,) = by_kind(lines, "tasks")
    assert tasks["count"] == len(Wordle.tasks("test")) and tasks["env_name"] == "wordle"
    assert tasks["first"] == {"id": "test/0000", "split": "test", "data": {}}
    assert tasks["keys"] == ["data", "id", "split"]  # never the answer
    assert by_kind(lines, "splits")[0]["splits"] == ["train", "test"]


def test_tools_in_the_openai_responses_shape(outcome: tuple[list[dict[str, Any]], int]) -> None:
    (tools,) = by_kind(outcome[0], "tools")
    guess = tools["tools"][0]
    assert guess["type"] == "function" and guess["name"] == "guess"
    assert guess["parameters"]["required"] == ["word"]
    assert tools["specs"] == ["guess", "get_history"]


def test_plays_a_task_to_a_win_then_further_calls_are_refused(outcome: tuple[list[dict[str, Any]], int]) -> None:
    (episode,) = by_kind(outcome[0], "episode")
    assert "Wordle" in episode["prompt"]
    assert episode["finished"] and "Correct!" in episode["last"]
    assert episode["rewards"][:-1] == [0.0] * (len(episode["rewards"]) - 1)
    assert episode["rewards"][-1] == 1.0 + 0.5 * (1 - episode["guesses"] / 6)
    assert episode["refused"]["reason"] == "episode_finished"


def test_split_and_index_session_with_bad_calls(outcome: tuple[list[dict[str, Any]], int]) -> None:
    (indexed,) = by_kind(outcome[0], "indexed")
    assert indexed["bad"] == "input_validation" and indexed["unknown"] == "not_found"
    assert indexed["finished"] and indexed["rewards"][-1] > 1.0


def test_the_client_deletes_its_sessions(outcome: tuple[list[dict[str, Any]], int]) -> None:
    assert outcome[1] == 0


def test_example_runs_as_written() -> None:
    python = peer_python("openreward")
    example = ROOT / "examples" / "ors_wordle.py"
    result = subprocess.run(
        [str(python), str(example), "--episodes", "2"], capture_output=True, text=True, timeout=180, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.count("Correct!") == 2 and "splits ['train', 'test']" in result.stdout


def test_every_public_method_of_the_environment_and_session() -> None:
    """Each public method of the SDK's ``Environment`` and ``Session``, listed from its source."""
    python = peer_python("openreward")
    with pytest.MonkeyPatch.context() as patch, running(create_app(Wordle)) as url:
        patch.setenv("OMNIENV_URL", url)
        lines = run_json(python, PEERS / "openreward" / "every_method.py", timeout=180)
    (public,) = by_kind(lines, "public")
    results = {(line["owner"], line["name"].split("/")[0]): line for line in by_kind(lines, "method")}
    for owner in ("environment", "session"):
        assert {name for kind, name in results if kind == owner} == set(public[owner])  # none left out
    errors = {key: line["error"] for key, line in results.items() if "error" in line}
    assert set(errors) == {
        ("environment", "get_prompt"),  # sends a bare minted id, no task: no server can know the prompt
        ("session", "call_terminal_tool"),  # ours have no @terminal tool: the SDK's own refusal
        ("session", "score_group"),  # no group scoring: the SDK's own ScoreGroupUnsupported
    }, errors
    assert "has no task yet: POST /create" in errors["environment", "get_prompt"]
    assert errors["session", "call_terminal_tool"].startswith("ToolCallError: not_found")
    assert errors["session", "score_group"].startswith("ScoreGroupUnsupported")

    def value(owner: str, name: str) -> Any:
        return next(
            line["value"] for line in by_kind(lines, "method") if (line["owner"], line["name"]) == (owner, name)
        )

    assert value("environment", "deployment_name") == "local/wordle"
    assert value("environment", "num_tasks") == len(Wordle.tasks("test"))
    assert value("environment", "get_task")["task_spec"]["id"] == "test/0003"
    assert [task["task_spec"]["id"] for task in value("environment", "get_task_range")] == ["test/0001", "test/0002"]
    assert value("environment", "list_required_secrets") == []
    assert value("environment", "get_task_difficulty") == []  # this server logs no rollouts
    assert value("environment", "terminal_tool") is None and value("session", "is_assistant_message_final") is False
    assert value("session", "version")["version"]
    assert "Wordle" in value("session", "get_prompt")[0]["text"]
    assert value("session", "get_messages/openai")[0]["role"] == "user"
    assert value("session", "call_tool")["reward"] == 0.0 and value("session", "call_tool")["finished"] is False
    for form in ("None", "openrouter", "anthropic", "google"):
        assert len(value("environment", f"list_tools/{form}")) == 2
