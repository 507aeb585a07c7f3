"""verifiers' own ``vf-eval`` plays our Wordle against a scripted OpenAI-compatible model, to a win.

``examples/verifiers_wordle.py`` serves the solver as a chat-completions model on 127.0.0.1 and
runs ``vf-eval omnienv-verifiers`` through the real ``openai`` client: the v1 taskset on
verifiers 0.4.0, the classic ``load_environment``/``StatefulToolEnv`` on verifiers 0.3.1, each in
its own virtualenv. verifiers 0.4's ``null`` harness installs its chat script with
``uv sync --script`` on first use (cached afterwards).

verifiers 0.4's ``vf-eval`` also loads Jupyter and Desktop by name and plays them against the
conformance matrix's scripted models (served here, streaming as verifiers' chat harness asks):
the episode's reward, and for the desktop the screenshots
reaching the model as image parts. A Counter run with ``--env.agent.max-turns 1`` shows the
episode ended and scored with the rubric when verifiers' turn budget stops it.

``check_taskset.py`` (0.4) and ``check_env.py`` (0.3) then drive each API without a model, to pin
the reward, the rubric's parts, the stop condition, how an infrastructure failure shows, image
results, the end at the turn budget (0.3) and dataset rows built without a sandbox.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from omnienv.rollout.scripted_openai import create_app
from omnienv.server import running
from tests.matrix.cells import CELLS
from tests.matrix.model import model_view, scripted_model
from tests.matrix.reference import reference
from tests.peerenv import PEERS, ROOT, peer_python
from tests.peers._run import by_kind, run_json

EXAMPLE = ROOT / "examples" / "verifiers_wordle.py"


@pytest.mark.parametrize(("peer", "version"), [("verifiers", "0.4.0"), ("verifiers03", "0.3.1")])
def test_vf_eval_wins_wordle(peer: str, version: str) -> None:
    python = peer_python(peer)
    result = subprocess.run([str(python), str(EXAMPLE)], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert result.returncode == 0, f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    match = re.search(r"verifiers (\S+): (\d+) rollouts, rewards \[([^\]]*)\]", result.stdout)
    assert match, result.stdout
    assert match.group(1) == version and match.group(2) == "2"
    rewards = [float(value) for value in match.group(3).split(",")]
    assert len(rewards) == 2 and all(reward > 1.0 for reward in rewards)
    assert "all won" in result.stdout


def vf_eval(base_url: str, *options: str, timeout: float = 300) -> list[dict[str, Any]]:
    """The traces of one ``vf-eval omnienv-verifiers`` run (verifiers 0.4) against ``base_url``."""
    python = peer_python("verifiers")
    command = [
        str(python.parent / "vf-eval"),
        "omnienv-verifiers",
        *options,
        *("--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess"),
        *("-m", "scripted", "--client.base-url", base_url, "--client.api-key-var", "SCRIPTED_KEY"),
        *("-r", "1", "--no-push", "--no-rich"),
    ]
    env = {**os.environ, "SCRIPTED_KEY": "unused", "PATH": f"{python.parent}:{os.environ['PATH']}"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        run = subprocess.run(
            [*command, "-o", str(out)], env=env, cwd=tmp, capture_output=True, text=True, timeout=timeout
        )
        assert run.returncode == 0, f"vf-eval failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        return [
            trace
            for path in out.rglob("traces.jsonl")
            for line in path.read_text().splitlines()
            for trace in json.loads(line)["traces"]
        ]


def score(trace: dict[str, Any]) -> float:
    return sum(reward["score"] * reward["weight"] for reward in trace["rewards"].values() if reward)


@pytest.mark.parametrize("env", ["jupyter", "desktop"])
def test_vf_eval_plays_jupyter_and_desktop_by_name(env: str) -> None:
    cell = CELLS[env]
    with ExitStack() as stack:
        url, log = stack.enter_context(scripted_model(env))
        options = ("--env.taskset.env", env, "--env.taskset.split", "test", "--env.taskset.tasks", cell.task_id)
        (trace,) = vf_eval(url, *options)
    assert trace["ok"] and trace["stop_condition"] == "episode_over", trace.get("errors")
    assert score(trace) == pytest.approx(reference(env).total)
    assert trace["metrics"]["steps"] == len(reference(env).rewards)
    seen, texts, images = model_view(log)
    assert any(cell.prompt_fragment in text for text in seen)
    assert all(cell.secret not in text for text in seen)
    assert all(len(text) < 20000 for text in texts)  # no screenshot as base64 text
    if cell.images:
        assert any(image["size"] == [1024, 768] for image in images), images


def test_vf_eval_ends_and_scores_the_episode_at_its_turn_budget() -> None:
    def add_one(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        return [("add", {"n": 1})]

    with running(create_app(add_one)) as url:
        options = ("--env.taskset.env", "tests.dialects.envs:Counter", "--env.taskset.episodes", "1")
        (trace,) = vf_eval(f"{url}/v1", *options, "--env.agent.max-turns", "1")
    assert trace["ok"] and trace["stop_condition"] == "max_turns", trace.get("errors")
    assert trace["metrics"]["steps"] == 1.0
    assert trace["metrics"]["reached"] == 0.0  # the rubric ran on the state reached (total 1 of 3)
    assert score(trace) == pytest.approx(0.25)


def test_v1_taskset_tools_rewards_and_failures() -> None:
    lines = run_json(peer_python("verifiers"), PEERS / "verifiers" / "check_taskset.py", timeout=300)
    (taskset,) = by_kind(lines, "taskset")
    assert taskset["class"] == "OmniTaskset" and taskset["seeds"] == [0, 1]
    assert all(prompt.startswith("Reach 3.") for prompt in taskset["prompts"])
    (tools,) = by_kind(lines, "tools")
    assert set(tools["tools"]) == {"add", "peek"}
    assert tools["tools"]["add"]["properties"]["n"]["type"] == "integer"
    assert "negative amount crashes" in tools["tools"]["add"]["properties"]["n"]["description"]
    (win,) = by_kind(lines, "win")
    assert win["texts"][:2] == ["total 1", "total 3"] and "episode is over" in win["texts"][2]
    assert win["reward"] == 1.5 and win["rubric"] == {"reached": 1.0} and win["stop"] and win["steps"] == 2
    (crash,) = by_kind(lines, "crash")
    assert crash["reward"] == "raised EnvironmentFailure"  # verifiers records it as a TaskError
    assert crash["failure"]["kind"] == "env_error" and crash["stop"] and crash["steps"] == 1
    (image,) = by_kind(lines, "image")
    assert image["content"] == [{"type": "image", "mime_type": "image/png"}, {"type": "text", "mime_type": None}]
    assert image["closed"]
    (preview,) = by_kind(lines, "preview")  # built while Jupyter's and Desktop's setup refused to run
    assert "sales.csv" in preview["rows"]["jupyter"][0] and preview["rows"]["desktop"][0]


def test_classic_env_tools_rewards_and_failures() -> None:
    lines = run_json(peer_python("verifiers03"), PEERS / "verifiers03" / "check_env.py", timeout=300)
    (env,) = by_kind(lines, "env")
    assert env["class"] == "OmniToolEnv" and env["rows"] == 2 and env["question"].startswith("Reach 3.")
    assert set(env["tool_defs"]) == {"add", "peek"}
    assert list(env["tool_defs"]["add"]["properties"]) == ["n"]  # the injected state stays hidden
    assert env["functions"] == ["episode_reward", "reached"] and env["weights"] == [1.0, 0.0]
    (win,) = by_kind(lines, "win")
    assert win["reward"] == 1.5 and win["stop"] and not win["has_error"]
    assert win["omnienv"]["rubric"] == {"reached": 1.0}
    (crash,) = by_kind(lines, "crash")
    assert crash["has_error"] and crash["error"] == "InfraError" and crash["stop"]
    assert crash["reward"] == "nan"  # verifiers would score a raising reward function 0.0
    assert crash["omnienv"]["failure"]["kind"] == "env_error" and crash["open_episodes"] == 0
    (budget,) = by_kind(lines, "budget")  # verifiers' cleanup ended it before scoring
    assert budget["omnienv"]["truncated"] and budget["omnienv"]["rubric"] == {"reached": 0.0}
    assert budget["reward"] == 0.25 and budget["open_episodes"] == 0
    (image,) = by_kind(lines, "image")
    assert image["parts"] == [{"type": "image_url", "url": "data:image/png;base64,"}, {"type": "text", "url": ""}]
    (preview,) = by_kind(lines, "preview")  # built while Jupyter's and Desktop's setup refused to run
    jupyter, desktop = preview["rows"]["jupyter"][0], preview["rows"]["desktop"][0]
    assert "sales.csv" in jupyter["question"] and desktop["question"]
    assert jupyter["answer"] == "" and jupyter["info"] == {"task_id": "test/sales_total-3", "seed": 0}
