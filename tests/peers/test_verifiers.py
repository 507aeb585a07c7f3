"""verifiers' own ``vf-eval`` plays our Wordle against a scripted OpenAI-compatible model, to a win.

``examples/verifiers_wordle.py`` serves the solver as a chat-completions model on 127.0.0.1 and
runs ``vf-eval omnienv-verifiers`` through the real ``openai`` client: the v1 taskset on
verifiers 0.4.0, the classic ``load_environment``/``StatefulToolEnv`` on verifiers 0.3.1, each in
its own virtualenv. verifiers 0.4's ``null`` harness installs its chat script with
``uv sync --script`` on first use (cached afterwards).

``check_taskset.py`` (0.4) and ``check_env.py`` (0.3) then drive each API without a model, to pin
the reward, the rubric's parts, the stop condition and how an infrastructure failure shows.
"""

from __future__ import annotations

import re
import subprocess

import pytest

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
    assert crash["omnienv"]["failure"]["kind"] == "env_error" and crash["open_episodes"] == 0
