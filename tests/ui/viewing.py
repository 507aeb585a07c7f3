"""`omnienv view FILE` as a real process, and the files the summary tests read."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson

from omnienv.core import Failure, Observation, StepResult, ToolCall
from omnienv.envs.wordle import Wordle
from omnienv.rollout.loop import EpisodePlan
from omnienv.rollout.run import plan_episodes, rollout
from omnienv.rollout.scripted import make_policy
from omnienv.rollout.trajectory import Episode, Step
from tests.net import free_port

HOSTILE_TASK = "test/<img src=x onerror=\"window.pwned='task'\">"
HOSTILE_REASON = "<script>window.pwned='reason'</script> the sandbox went away"
HOSTILE_METRIC = "rewards/<img src=x onerror=\"window.pwned='metric'\">/mean"


@contextmanager
def omnienv_view(path: Path, ready: str = "/api/trajectory") -> Iterator[str]:
    """`omnienv view PATH --port P`, polled until it answers (30 s deadline), reaped whatever happens."""
    port = free_port()
    command = [sys.executable, "-m", "omnienv.cli.main", "view", str(path), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}{ready}", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                output = process.communicate(timeout=10)[0].decode()
                raise RuntimeError(f"omnienv view did not start: {output}")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        if process.stdout:
            process.stdout.close()


def _failed(index: int, task: str, reason: str, reward: float) -> dict[str, Any]:
    """An episode an infrastructure failure voided: its steps earned ``reward``, which must never count."""
    episode = Episode("wordle", index, task, index, "llm", prompt=Observation.of("Guess the word."))
    episode.steps.append(
        Step(ToolCall("guess", {"word": "crane"}), StepResult(Observation.of("C R A N E"), reward), 0.01)
    )
    episode.failure = Failure("sandbox_crashed", reason)
    record = episode.to_dict()
    assert record["reward"] is None  # what rollouts write for a void episode
    record["steps"][0]["reward"] = reward
    return record


def write_eval_file(path: Path) -> Path:
    """Real Wordle episodes (solver wins on test, random play on train, mostly lost) and three
    failed ones, two of them with markup in their task id and reason. Played in a thread of its
    own: the browser tests' Playwright holds an event loop in theirs."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_write_eval_file, path).result()


def _write_eval_file(path: Path) -> Path:
    rollout(Wordle, make_policy("solver", Wordle), plan_episodes(Wordle, 4, "test"), out=path)
    train = [EpisodePlan(plan.index + 4, plan.task_id, plan.seed) for plan in plan_episodes(Wordle, 3, "train", 40)]
    more = path.with_name("more.jsonl")
    rollout(Wordle, make_policy("random", Wordle, seed=3), train, out=more)
    with path.open("ab") as handle:
        handle.write(more.read_bytes())
        handle.write(orjson.dumps(_failed(7, HOSTILE_TASK, HOSTILE_REASON, 0.75)) + b"\n")
        handle.write(orjson.dumps(_failed(8, "train/0001", HOSTILE_REASON, 0.0)) + b"\n")
        handle.write(orjson.dumps(_failed(9, "train/0002", "the kernel did not start", 0.0)) + b"\n")
    more.unlink()
    return path


def train_rows(steps: int = 60) -> list[dict[str, Any]]:
    """A training log's lines, as the GRPO demo writes them: the batch mean reward and TRL's metrics."""
    rng = random.Random(5)
    rows = []
    for step in range(1, steps + 1):
        reward = 0.2 + 0.6 * (1 - math.exp(-step / 20)) + rng.uniform(-0.05, 0.05)
        rows.append(
            {
                "kind": "train_step",
                "step": step,
                "reward": reward,
                "reward_std": 0.3 + rng.uniform(-0.05, 0.05),
                "loss": 0.5 * math.exp(-step / 30),
                "rewards/WordleReward/mean": reward * 0.9,
                "tools/call_frequency": 3 + rng.random(),
                HOSTILE_METRIC: 1.0,
                "completions/clipped_ratio": 0.0,
                "model_name": "tiny",  # not a number: not a curve
            }
        )
    return rows


def write_train_log(path: Path, steps: int = 60) -> Path:
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in train_rows(steps)))
    return path
