"""Evals against a local OpenAI-compatible server that plays the Wordle solver (real openai client)."""

from __future__ import annotations

import base64
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from omnienv.core import Environment, ImageBlock, Task, ToolResult, tool
from omnienv.envs.wordle import Wordle, score_guess
from omnienv.envs.wordle.responder import wordle_responder
from omnienv.rollout import plan_episodes, read_episodes, rollout
from omnienv.rollout.llm import ChatPolicy
from omnienv.rollout.scripted_openai import Faults, create_app, observations
from omnienv.rollout.trajectory import TRAINER_END
from omnienv.server import running


@pytest.fixture
def endpoint() -> Iterator[str]:
    with running(create_app(wordle_responder)) as url:
        yield f"{url}/v1"


def eval_command(base_url: str, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "omnienv.cli.main",
        "eval",
        "wordle",
        "--model",
        "scripted",
        "--base-url",
        base_url,
        "--split",
        "test",
        "--out",
        str(out),
        *extra,
    ]


def test_eval_command_wins_and_writes_summary(endpoint: str, tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    command = eval_command(endpoint, out, "--episodes", "20", "--concurrency", "8")
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "win rate" in result.stdout and "100.0%" in result.stdout
    episodes = read_episodes(out)
    assert sorted(e.index for e in episodes) == list(range(20))
    assert all(e.success and e.failure is None for e in episodes)
    first = episodes[0]
    assert first.messages is not None and first.messages[0]["role"] == "user"
    assert first.messages[1]["tool_calls"][0]["function"]["name"] == "guess"
    assert first.usage["prompt_tokens"] > 0 and first.usage["completion_tokens"] > 0
    summary = orjson.loads((tmp_path / "run.summary.json").read_bytes())
    assert summary["episodes"] == 20 and summary["success_rate"] == 1.0 and summary["failures"] == 0
    assert summary["prompt_tokens"] == sum(e.usage["prompt_tokens"] for e in episodes)


def test_killed_eval_resumes_without_replaying(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    with running(create_app(wordle_responder, faults=Faults(stall_every=1, stall_s=0.05))) as slow:
        process = subprocess.Popen(
            eval_command(f"{slow}/v1", out, "--episodes", "12", "--concurrency", "1"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while not (out.exists() and out.read_bytes().count(b"\n") >= 3):
                assert process.poll() is None, "the eval ended before it could be interrupted"
                assert time.monotonic() < deadline, "no episodes were written in time"
                time.sleep(0.05)
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.wait(30)
    before = read_episodes(out, repair=True)
    assert 3 <= len(before) < 12
    with running(create_app(wordle_responder)) as fast:
        result = subprocess.run(
            eval_command(f"{fast}/v1", out, "--episodes", "12"), capture_output=True, text=True, timeout=300
        )
    assert result.returncode == 0, result.stderr
    after = read_episodes(out)
    assert sorted(e.index for e in after) == list(range(12))
    assert [e.to_dict() for e in after[: len(before)]] == [e.to_dict() for e in before]


@pytest.mark.parametrize("mode", ["responses", "text"])
def test_other_modes_win(endpoint: str, mode: str) -> None:
    policy = lambda: ChatPolicy("scripted", Wordle.tools, base_url=endpoint, mode=mode)  # noqa: E731
    summary = rollout(Wordle, policy, plan_episodes(Wordle, 4, "test"), concurrency=2)
    assert summary.success_rate == 1.0 and summary.failures == 0


def test_flaky_endpoint_is_retried(tmp_path: Path) -> None:
    # Played one request at a time, no three request numbers in a row are multiples of 3 or 5,
    # so every request succeeds within its 3 retries: each failure here is a retry bug.
    # The timeout sits well above one reply's cost (the solver, slower under coverage) and well
    # below a stall, so only the stalled requests time out.
    faults = Faults(error_every=3, stall_every=5, stall_s=6.0)
    with running(create_app(wordle_responder, faults=faults)) as url:

        def policy() -> ChatPolicy:
            return ChatPolicy("scripted", Wordle.tools, base_url=f"{url}/v1", max_retries=3, timeout_s=2.0)

        summary = rollout(Wordle, policy, plan_episodes(Wordle, 4, "test"), concurrency=1)
    assert summary.failures == 0 and summary.success_rate == 1.0


def test_dead_endpoint_flags_failures_and_the_run_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "dead.jsonl"
    with running(create_app(wordle_responder, faults=Faults(error_every=1))) as url:
        policy = lambda: ChatPolicy("scripted", Wordle.tools, base_url=f"{url}/v1", max_retries=0)  # noqa: E731
        summary = rollout(Wordle, policy, plan_episodes(Wordle, 5, "test"), out=out, concurrency=2)
    assert summary.failures == 5 and summary.scored == 0
    episodes = read_episodes(out)
    assert all(e.failure is not None and e.failure.kind == "model" for e in episodes)
    assert "InternalServerError" in episodes[0].failure.message  # type: ignore[union-attr]


def test_model_that_stops_calling_tools_ends_the_episode(tmp_path: Path) -> None:
    with running(create_app(responder=lambda messages: [])) as url:
        policy = lambda: ChatPolicy("scripted", Wordle.tools, base_url=f"{url}/v1")  # noqa: E731
        summary = rollout(Wordle, policy, plan_episodes(Wordle, 2, "test"))
    assert summary.stopped == 2 and summary.failures == 0 and summary.mean_reward == 0.0


def test_an_episode_the_model_stops_early_is_ended_and_scored_by_the_rubric(tmp_path: Path) -> None:
    """As every trainer does (TRL, Inspect, NeMo Gym...): the rubric scores the state reached, so an
    eval and a training run give a model that stops early the same reward."""

    def guess_once(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        return [] if any(m.get("role") == "tool" for m in messages) else [("guess", {"word": "crane"})]

    out = tmp_path / "stopped.jsonl"
    plans = plan_episodes(Wordle, 3, "test")
    with running(create_app(responder=guess_once)) as url:
        policy = lambda: ChatPolicy("scripted", Wordle.tools, base_url=f"{url}/v1")  # noqa: E731
        summary = rollout(Wordle, policy, plans, out=out)
    answers = {task.id: task.answer for task in Wordle.tasks("test")}
    for episode in read_episodes(out):
        greens = score_guess("crane", answers[episode.task_id]).count("🟩")
        assert episode.stopped == "the model answered without calling a tool" and episode.failure is None
        assert [step.call.name for step in episode.steps] == ["guess", TRAINER_END] and episode.truncated
        assert episode.reward == pytest.approx(0.1 * greens)  # partial credit: the rubric ran
        assert episode.steps[-1].result.info["rubric"] == {"solved": 0.0, "partial_credit": pytest.approx(0.1 * greens)}
    assert summary.stopped == 3 and summary.failures == 0


def test_eval_against_a_remote_environment_server(endpoint: str, tmp_path: Path) -> None:
    from omnienv.app import create_app as create_env_app

    out = tmp_path / "remote.jsonl"
    with running(create_env_app(Wordle)) as env_url:
        result = subprocess.run(
            eval_command(endpoint, out, "--episodes", "6", "--concurrency", "3", "--url", env_url),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode == 0, result.stderr
    episodes = read_episodes(out)
    assert len(episodes) == 6 and all(e.success for e in episodes)


def test_the_scripted_endpoint_streams_the_same_answer_when_asked(endpoint: str) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=endpoint, api_key="local", max_retries=0)
    request = {
        "model": "scripted",
        "messages": [{"role": "user", "content": "Let's play Wordle."}],
        "tools": [{"type": "function", "function": {"name": "guess", "parameters": {"type": "object"}}}],
    }
    whole = client.chat.completions.create(**request).choices[0].message.tool_calls
    chunks = list(client.chat.completions.create(**request, stream=True, stream_options={"include_usage": True}))
    calls = [call for chunk in chunks for choice in chunk.choices for call in choice.delta.tool_calls or ()]
    assert whole and [(c.function.name, c.function.arguments) for c in calls] == [
        (c.function.name, c.function.arguments) for c in whole
    ]
    assert chunks[-1].usage is not None and chunks[-2].choices[0].finish_reason == "tool_calls"


PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class Camera(Environment):
    """One tool that answers with an image and a line of text, as a screenshot tool does."""

    name = "camera"
    max_turns = 4

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "Look, then say what you saw."

    @tool
    def look(self) -> ToolResult:
        """Take a picture."""
        return ToolResult.of(["a picture:", ImageBlock(PIXEL)])

    @tool
    def say(self, what: str) -> ToolResult:
        """Say what the picture showed.

        Args:
            what: The answer.
        """
        return ToolResult.of("noted", reward=1.0, done=True)


@pytest.mark.parametrize("mode", ["chat", "responses", "text"])
def test_images_reach_the_model_as_image_parts_in_every_mode(mode: str) -> None:
    """README: "Images (screenshots) go to the model as image parts" (chat, Responses and text modes)."""
    seen: list[Any] = []

    def responder(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        parts = [p for m in messages if isinstance(m.get("content"), list) for p in m["content"]]
        images = [p for p in parts if p.get("type") in ("image_url", "input_image")]
        if not observations(messages):
            return [("look", {})]
        seen.extend(images)
        return [("say", {"what": "a dot"})]

    with running(create_app(responder)) as url:
        policy = lambda: ChatPolicy("scripted", Camera.tools, base_url=f"{url}/v1", mode=mode)  # noqa: E731
        summary = rollout(Camera, policy, plan_episodes(Camera, 1, None))
    assert summary.failures == 0 and summary.mean_reward == 1.0, summary
    data_url = "data:image/png;base64," + base64.b64encode(PIXEL).decode()
    if mode == "responses":
        assert seen == [{"type": "input_image", "image_url": data_url}], seen
    else:
        assert seen == [{"type": "image_url", "image_url": {"url": data_url}}], seen
