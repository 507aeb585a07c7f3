"""TRL 1.16's GRPOTrainer trains on omnienv's Wordle, in-process and served, in TRL's own virtualenv.

``examples/train_wordle_grpo.py --tiny`` builds a tiny model locally (nothing is downloaded) and runs
two GRPO steps on the CPU; these tests assert on what it printed: the tools TRL found, the env's
replies to the model's tool calls, and the rewards TRL logged. The served run talks to a real
``omnienv serve wordle`` on a free port. ``check_factory.py`` reads the generated classes with
transformers' ``get_json_schema``, as GRPOTrainer does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.net import free_port, healthy
from tests.peerenv import ROOT, peer_python

EXAMPLE = ROOT / "examples" / "train_wordle_grpo.py"
CHECK = ROOT / "tests" / "peers" / "trl" / "check_factory.py"
RUN_TIMEOUT_S = 600.0
START_DEADLINE_S = 60.0
MARKS = ("🟩", "🟨", "⬛")


@pytest.fixture(scope="module")
def trl_python() -> Path:
    return peer_python("trl")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shared by both runs: the first builds the tiny model, the second reuses it."""
    return tmp_path_factory.mktemp("trl") / "tiny-model"


def _run(python: Path, *args: str, cwd: Path = ROOT) -> str:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def _lines(output: str, tag: str) -> list[Any]:
    return [json.loads(line[len(tag) + 1 :]) for line in output.splitlines() if line.startswith(tag + " ")]


def _train(trl_python: Path, tiny_dir: Path, tmp_path: Path, *extra: str) -> str:
    return _run(
        trl_python,
        str(EXAMPLE),
        "--tiny",
        "--steps",
        "2",
        "--tiny-dir",
        str(tiny_dir),
        "--output-dir",
        str(tmp_path / "run"),
        *extra,
    )


def _assert_trained(output: str) -> None:
    assert _lines(output, "TOOLS") == [["get_history", "guess"]]
    assert _lines(output, "REWARD_FUNCS") == [["Wordle"]]
    steps = [log for log in _lines(output, "LOG") if "rewards/Wordle/mean" in log]
    assert [log["step"] for log in steps] == [1, 2]
    for log in steps:
        assert log["tools/call_frequency"] > 0
        assert log["reward"] == pytest.approx(log["rewards/Wordle/mean"], nan_ok=True)
    episodes = _lines(output, "EPISODE")
    assert len(episodes) == 8  # 2 steps x 4 generations, one get_reward each
    replies = [call for episode in episodes for call in episode["calls"]]
    assert replies, "the model made no tool call the environment executed"
    assert all(call.startswith(("guess(", "get_history(")) for call in replies)
    played = [call for call in replies if any(mark in call for mark in MARKS)]
    assert played, f"no guess was scored by the environment: {replies}"
    for episode in episodes:
        assert episode["failure"] is None and isinstance(episode["reward"], float)
        assert 0.0 <= episode["reward"] <= 1.5
    summary = [line for line in output.splitlines() if line.startswith("DONE ")]
    assert summary and summary[0].startswith("DONE steps=2 episodes=8 ")
    assert f"env_tool_calls={len(replies)}" in summary[0]


def test_generated_classes_read_by_transformers(trl_python: Path) -> None:
    report = _lines(_run(trl_python, str(CHECK)), "REPORT")[0]
    assert report["wordle"]["tools"] == ["get_history", "guess"]
    assert report["shapes"]["tools"] == ["clear", "draw"]
    assert report["wordle"]["mismatches"] == [] and report["shapes"]["mismatches"] == []
    draw = report["shapes"]["schemas"]["draw"]["function"]["parameters"]
    assert draw["required"] == ["colour", "mode", "tags"]
    assert draw["properties"]["colour"]["enum"] == ["red", "blue"]
    assert draw["properties"]["at"]["type"] == "object"  # a pydantic model reads as a JSON object
    data = report["dataset"]
    assert data["columns"] == ["prompt", "task_id"]
    assert data["rows"][0] == {"prompt": [{"role": "user", "content": ""}], "task_id": "test/0000"}
    assert data["prompt"].startswith("Let's play Wordle.")


def test_grpo_trains_on_wordle_in_process(trl_python: Path, tiny_dir: Path, tmp_path: Path) -> None:
    _assert_trained(_train(trl_python, tiny_dir, tmp_path))


@pytest.fixture
def wordle_server() -> Iterator[str]:
    """``omnienv serve wordle`` on a free port, healthy before the test and always reaped after."""
    url = f"http://127.0.0.1:{free_port()}"
    cmd = [
        str(Path(sys.executable).with_name("omnienv")),
        "serve",
        "wordle",
        "--host",
        "127.0.0.1",
        "--port",
        url.rsplit(":", 1)[1],
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while not healthy(url):
            if proc.poll() is not None:
                pytest.fail(f"omnienv serve exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
            if time.monotonic() > deadline:
                pytest.fail(f"omnienv serve was not healthy within {START_DEADLINE_S:g} s")
            time.sleep(0.05)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        if proc.stderr:
            proc.stderr.close()


def test_grpo_trains_on_a_served_wordle(trl_python: Path, tiny_dir: Path, tmp_path: Path, wordle_server: str) -> None:
    output = _train(trl_python, tiny_dir, tmp_path, "--env", wordle_server)
    _assert_trained(output)
    assert healthy(wordle_server)


def test_failed_episodes_are_masked_by_trl(trl_python: Path, tiny_dir: Path, tmp_path: Path) -> None:
    """A crashed tool voids its episode: get_reward is None, and TRL leaves it out of the rewards."""
    output = _train(trl_python, tiny_dir, tmp_path, "--env", "tests.peers.trl.flaky_wordle:FlakyWordle")
    episodes = _lines(output, "EPISODE")
    failed = [episode for episode in episodes if episode["failure"]]
    assert failed, "the flaky environment never failed: the test proves nothing"
    assert all(episode["reward"] is None and "the sandbox died" in episode["failure"] for episode in failed)
    steps = [log for log in _lines(output, "LOG") if "rewards/Wordle/mean" in log]
    assert len(steps) == 2 and len(episodes) == 8
    for log, batch in zip(steps, (episodes[:4], episodes[4:]), strict=True):
        scored = [episode["reward"] for episode in batch if episode["reward"] is not None]
        if scored:
            assert log["reward"] == pytest.approx(sum(scored) / len(scored))
        else:  # every rollout void: TRL logs NaN (JSON null) and trains on nothing
            assert log["reward"] is None or log["reward"] != log["reward"]


def test_grpo_trains_on_two_environments_in_one_run(
    trl_python: Path, tiny_dir: Path, tmp_path: Path, wordle_server: str
) -> None:
    """A dict environment_factory: rows name their environment (one in-process, one served), and
    each environment scores only its own rollouts."""
    output = _train(trl_python, tiny_dir, tmp_path, "--also", wordle_server)
    assert _lines(output, "REWARD_FUNCS") == [["Wordle", "WordleAlso"]]
    episodes = _lines(output, "EPISODE")
    assert len(episodes) == 16  # 2 steps x 2 prompts x 4 generations
    by_env = {name: [e for e in episodes if e["env"] == name] for name in ("Wordle", "WordleAlso")}
    assert [len(group) for group in by_env.values()] == [8, 8]
    for group in by_env.values():
        assert all(e["failure"] is None and isinstance(e["reward"], float) for e in group)
    steps = [log for log in _lines(output, "LOG") if "rewards/Wordle/mean" in log]
    assert [log["step"] for log in steps] == [1, 2]
    for step, log in enumerate(steps):
        for name, group in by_env.items():
            mine = [e["reward"] for e in group[step * 4 : step * 4 + 4]]
            assert log[f"rewards/{name}/mean"] == pytest.approx(sum(mine) / len(mine))
    assert healthy(wordle_server)
