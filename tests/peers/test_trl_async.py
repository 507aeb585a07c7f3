"""environment_factory classes cross into a spawned process, as TRL's AsyncGRPOTrainer sends them.

``check_pickle.py`` pickles generated classes (a registered name, a served URL) into a spawned child
that plays a guess with each, and shows that a subclass travels by reference. ``check_async_worker.py``
runs TRL's own ``AsyncRolloutWorker`` with ``environment_factory(url)`` against a stand-in for vLLM's
``/v1/completions`` that samples from a tiny model: the rollouts come back with the served Wordle's
tool replies in them, scored by its ``get_reward``. Both talk to a real ``omnienv serve wordle``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.catalog.servers import omnienv_server, served
from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind

SCRIPTS = ROOT / "tests" / "peers" / "trl"
RUN_TIMEOUT_S = 540.0
MARKS = ("🟩", "🟨", "⬛")


@pytest.fixture(scope="module")
def trl_python() -> Path:
    return peer_python("trl")


@pytest.fixture(scope="module")
def wordle_url() -> Iterator[str]:
    command, port = omnienv_server("wordle")
    with served(command, port) as running:
        yield running.url


@pytest.fixture(scope="module")
def pickled(trl_python: Path, wordle_url: str) -> list[dict[str, Any]]:
    return _run(trl_python, "check_pickle.py", wordle_url)


def _run(python: Path, script: str, *args: str) -> list[dict[str, Any]]:
    """The script's JSON lines; its whole process group (spawned children too) is reaped, whatever happened."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "PYTHONPATH": str(ROOT),
    }
    cmd = [str(python), str(SCRIPTS / script), *args]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
    assert proc.returncode == 0, f"{script} exited {proc.returncode}\n{stdout[-4000:]}\n{stderr[-4000:]}"
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_factory_classes_unpickle_in_a_spawned_child(pickled: list[dict[str, Any]]) -> None:
    for kind, backend in (("name", "Wordle"), ("url", "WebSocketClient")):
        line = by_kind(pickled, kind)[0]
        assert line["recipe"], "a generated class must pickle as its recipe"
        child = line["child"]
        assert child["exitcode"] == 0
        assert child["class"] == "omnienv.dialects.trl.Wordle"
        assert child["bases"][0] == "TRLEnvironment"
        assert child["tools"] == ["get_history", "guess"]
        assert child["backend"] == backend  # in-process, or a session on the server
        assert child["prompt"].startswith("Let's play Wordle.")
        assert child["observation"].startswith("CRANE ") and any(mark in child["observation"] for mark in MARKS)
        assert isinstance(child["reward"], float)


def test_a_subclass_pickles_by_reference(pickled: list[dict[str, Any]]) -> None:
    subclass = by_kind(pickled, "subclass")[0]
    assert not subclass["recipe"] and subclass["same"]
    child = subclass["child"]
    assert child["class"] == "__mp_main__.Loud" and child["bases"] == ["Plain", "TRLEnvironment"]
    assert child["prompt"].startswith("LOUD Let's play Wordle.")  # the subclass's own reset ran
    assert child["observation"].startswith("CRANE ")
    local = by_kind(pickled, "local")[0]["error"]
    assert local and "main.<locals>.Local" in local  # by reference: a local class fails loudly


def _expected_reward(replies: list[str]) -> float | None:
    """Wordle's rubric read off the tool replies: 0.1 per green of the best guess; None for a won game."""
    if any("Correct" in reply for reply in replies):
        return None
    return 0.1 * max((reply.count("🟩") for reply in replies if any(m in reply for m in MARKS)), default=0)


def test_trl_async_rollout_worker_plays_a_served_wordle(trl_python: Path, wordle_url: str, tmp_path: Path) -> None:
    lines = _run(trl_python, "check_async_worker.py", wordle_url, str(tmp_path / "tiny-model"))
    samples = by_kind(lines, "sample")
    assert len(samples) >= 4 and by_kind(lines, "standin")[0]["requests"] >= 4
    played = []
    for sample in samples:
        metrics, completion = sample["metrics"], sample["completion"]
        assert sample["prompt"].startswith("Let's play Wordle.")  # reset's prompt, appended by the worker
        reward = metrics["rewards/Wordle"]  # the column TRL adds for an environment with get_reward
        assert isinstance(reward, float) and not math.isnan(reward), "get_reward returned None: episode failed"
        assert metrics["reward"] == pytest.approx(reward)  # no reward function: the environment's alone
        replies = [message["content"] for message in completion if message["role"] == "tool"]
        expected = _expected_reward(replies)
        assert reward == pytest.approx(expected) if expected is not None else reward >= 1.0
        assert metrics.get("tools/call_frequency", 0.0) == len(replies)  # one reply per call the worker ran
        assert sample["trained"] > 0 and sample["tokens"] > sample["trained"]
        played += [reply for reply in replies if any(mark in reply for mark in MARKS)]
    assert played, f"no rollout has a guess the served Wordle scored: {samples}"
