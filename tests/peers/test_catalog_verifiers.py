"""The catalog's Verifiers importer, with verifiers' real packages, each in its own virtualenv.

``tests/catalog/verifiers_checks.py`` runs there: ``classic`` in verifiers 0.3.1's (a
``SingleTurnEnv`` and a ``ToolEnv`` from tests/catalog/vf_single.py and vf_tools.py, their
datasets built in memory), ``v1`` in verifiers 0.4.0's (a taskset with an MCP toolset from
tests/catalog/vf_v1_tasks.py). Each module is imported as ``verifiers/<module>``, passes the
contract checks, plays episodes scored by its own rubric, is cut short by the trainer, and fails
(flagged, never scored) when its own code raises. tests/catalog/test_verifiers_import.py covers
the main virtualenv, which has no verifiers.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind

SCRIPT = ROOT / "tests" / "catalog" / "verifiers_checks.py"


def _run(peer: str, api: str) -> list[dict[str, Any]]:
    """The JSON lines of ``verifiers_checks.py API`` run with peer ``peer``'s python."""
    result = subprocess.run(
        [str(peer_python(peer)), str(SCRIPT), api], capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert result.returncode == 0, f"{SCRIPT.name} {api} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def classic() -> list[dict[str, Any]]:
    return _run("verifiers03", "classic")


@pytest.fixture(scope="module")
def v1() -> list[dict[str, Any]]:
    return _run("verifiers", "v1")


def loaded(lines: list[dict[str, Any]], module: str) -> list[dict[str, Any]]:
    return [line for line in by_kind(lines, "load") if line["name"] == f"verifiers/tests.catalog.{module}"]


# -- classic: verifiers 0.3.1 -------------------------------------------------------------------


def test_classic_environments_pass_the_contract_checks(classic: list[dict[str, Any]]) -> None:
    for module in ("vf_single", "vf_tools"):
        (line,) = loaded(classic, module)
        assert line["ok"], line["failures"]


def test_classic_datasets_become_splits_with_hidden_answers(classic: list[dict[str, Any]]) -> None:
    (single,) = loaded(classic, "vf_single")
    assert list(single["splits"]) == ["train", "eval"]  # dataset, eval_dataset
    assert [task["answer"] for task in single["splits"]["eval"]] == ["42", "27"]
    assert all(task["data"] == {"index": i} for i, task in enumerate(single["splits"]["train"]))
    assert list(single["tools"]) == ["answer"]  # a single-turn environment: the reply is the answer
    (tools,) = loaded(classic, "vf_tools")
    assert list(tools["tools"]) == ["add", "answer"]
    add = tools["tools"]["add"]
    assert add["required"] == ["a", "b"] and add["properties"]["a"] == {
        "description": "The first number.",
        "type": "integer",
    }


def test_a_single_turn_answer_is_scored_by_the_environments_rubric(classic: list[dict[str, Any]]) -> None:
    (single,) = by_kind(classic, "single")
    right, wrong = single["right"], single["wrong"]
    assert right["prompt"] == "Reply with the number only.\n\nWhat is 3 * 9?"  # system prompt, question
    (answered,) = right["results"]
    assert answered["done"] and answered["reward"] == 1.5 and answered["failure"] is None
    assert answered["info"]["stop_condition"] == "max_turns_reached"
    assert right["state"]["metrics"] == {"correct": 1.0, "mentions": 1.0, "num_turns": 1.0}
    assert wrong["results"][0]["reward"] == 0.5  # only the half-weight "mentions" function
    cut = single["cut"]
    assert cut["truncated"] and cut["reward"] == 0.0 and cut["info"]["ended_by"] == "trainer"


def test_a_tool_episode_runs_the_environments_own_tools(classic: list[dict[str, Any]]) -> None:
    (tools,) = by_kind(classic, "tools")
    added, refused, answered = tools["results"]
    assert tools["prompt"] == "Use the add tool to compute 40 + 2."
    assert (added["text"], added["done"]) == ("42", False)
    # a tool that raises: verifiers shows the model its error, an ordinary observation
    assert refused["text"] == "add takes non-negative numbers only" and refused["failure"] is None
    assert answered["done"] and answered["reward"] == 1.0
    assert answered["info"]["stop_condition"] == "no_tools_called"
    assert tools["state"]["metrics"]["add_calls"] == 2.0


def test_exceptions_inside_classic_environments_are_flagged_failures(classic: list[dict[str, Any]]) -> None:
    (broken,) = by_kind(classic, "single_broken")  # a reward function raised (verifiers would score 0)
    (result,) = broken["results"]
    assert result["failure"]["kind"] == "env_error" and result["reward"] == 0.0
    assert "broken_judge: ZeroDivisionError: the judge divided by zero" in result["failure"]["message"]
    assert broken["state"]["reward"] is None and "metrics" not in broken["state"]
    (stopped,) = by_kind(classic, "tools_broken")  # a tool in stop_errors raised: verifiers stopped the rollout
    (result,) = stopped["results"]
    assert result["failure"]["kind"] == "env_error"
    assert "ToolCallError, caused by ValueError: add takes non-negative numbers only" in result["failure"]["message"]


def test_a_classic_episode_over_ws(classic: list[dict[str, Any]]) -> None:
    (ws,) = by_kind(classic, "ws")
    assert ws["tools"] == ["add", "answer"] and ws["added"]["text"] == "5"
    assert ws["answered"]["done"] and ws["answered"]["reward"] == 1.0


def test_an_imported_tool_env_over_ws_and_through_trl_scores_what_verifiers_does(
    classic: list[dict[str, Any]],
) -> None:
    """The same tasks and moves played by verifiers itself (``run_rollout``, a scripted model), over
    /ws from a real server of the imported name, and through TRL's environment_factory in-process."""
    (played,) = by_kind(classic, "same_moves")
    source, ws, trl = played["source"], played["ws"], played["trl"]
    assert source["train/00001"]["reward"] == 1.0 and source["train/00000"]["reward"] == 0.0  # a win and a loss
    assert source["train/00000"]["stop_condition"] == "max_turns_reached"
    for task, truth in source.items():
        assert truth["error"] is None, truth
        steps, state = ws[task]["steps"], ws[task]["state"]
        # ends where verifiers ended it, after as many moves, with the rubric's reward on the last step
        assert len(steps) == truth["moves"] and [s["done"] for s in steps] == [False] * (len(steps) - 1) + [True]
        assert not any(s["truncated"] or s["failure"] for s in steps)
        assert [s["reward"] for s in steps] == [0.0] * (len(steps) - 1) + [truth["reward"]]
        assert steps[-1]["info"]["stop_condition"] == truth["stop_condition"]
        assert state["reward"] == truth["reward"] and state["done"] and state["metrics"] == truth["metrics"]
        dialect = trl[task]
        assert dialect["said"] == [s["text"] for s in steps]  # the same observations
        assert dialect["reward"] == truth["reward"] and not dialect["failure"]
        assert dialect["after"] == "The episode is over; no more actions are taken."


def test_omnienv_import_verifiers_names_a_module_with_its_arguments(classic: list[dict[str, Any]]) -> None:
    (cli,) = by_kind(classic, "cli")
    assert cli["imported"][0] == 0, cli["imported"][1]
    assert "tools add, answer; splits train (2)" in cli["imported"][1]
    record = cli["saved"]["imports"]["vf-tools"]
    assert record == {
        "source": "verifiers",
        "target": "verifiers/tests.catalog.vf_tools",
        "args": {"max_turns": 4},
        "version": "0.3.1",
    }
    (row,) = cli["listed"]
    assert (row["name"], row["source"], row["version"], row["kind"]) == ("vf-tools", "verifiers", "0.3.1", "imported")
    assert cli["checked"][0] == 0, cli["checked"][1]
    assert cli["tools"] == ["add", "answer"] and cli["vf_max_turns"] == 4  # built with --args
    assert cli["not_json"][0] == 2 and "--args is not JSON" in cli["not_json"][1]


def test_modules_that_are_no_environment_are_refused_clearly(classic: list[dict[str, Any]]) -> None:
    (refused,) = by_kind(classic, "refused")
    assert (
        "cannot import the Verifiers environment module 'no_such_module_here'" in refused["said"]["no_such_module_here"]
    )
    assert "'json' is not a Verifiers environment" in refused["said"]["json"]


# -- v1: verifiers 0.4.0 ------------------------------------------------------------------------


def test_a_v1_taskset_passes_the_contract_checks(v1: list[dict[str, Any]]) -> None:
    with_tools, single_turn = loaded(v1, "vf_v1_tasks")
    assert with_tools["ok"], with_tools["failures"]
    assert single_turn["ok"], single_turn["failures"]
    assert list(with_tools["tools"]) == ["add", "answer"] and list(single_turn["tools"]) == ["answer"]
    assert with_tools["tools"]["add"]["required"] == ["a", "b"]
    assert [task["id"] for task in with_tools["splits"]["train"]] == ["train/00000", "train/00001", "train/00002"]


def test_a_v1_episode_shares_state_with_the_toolset_and_is_scored_by_the_task(v1: list[dict[str, Any]]) -> None:
    (episode,) = by_kind(v1, "v1_tools")
    added, refused, answered = episode["results"]
    assert episode["prompt"] == "Compute 40 + 2 and reply with the number."
    assert added["text"] == "42" and not added["done"]
    assert refused["is_error"] and "add takes non-negative numbers only" in refused["text"]  # MCP's error text
    assert refused["failure"] is None and not refused["done"]
    assert answered["done"] and answered["reward"] == 1.0  # the task's @vf.reward
    state = episode["state"]
    assert state["stop_condition"] == "agent_completed"
    assert state["metrics"] == {"tool_calls": 1.0}  # the @vf.metric reads the state the toolset wrote
    cut = episode["cut"]
    assert cut["truncated"] and cut["reward"] == 0.0 and episode["cut_state"]["stop_condition"] == "cut"


def test_a_single_turn_v1_taskset_and_a_raising_reward(v1: list[dict[str, Any]]) -> None:
    (single,) = by_kind(v1, "v1_single")
    assert single["right"]["results"][0]["reward"] == 1.0 and single["wrong"]["results"][0]["reward"] == 0.0
    (broken,) = by_kind(v1, "v1_broken")
    (result,) = broken["results"]
    assert result["failure"]["kind"] == "env_error" and result["reward"] == 0.0
    assert "ZeroDivisionError: the judge divided by zero" in result["failure"]["message"]
    (refused,) = by_kind(v1, "refused")  # verifiers 0.4 has no classic API to run a load_environment() with
    assert "install verifiers<0.4 to run it" in refused["said"]["old_style"]
