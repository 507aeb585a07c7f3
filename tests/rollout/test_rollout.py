from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from omnienv.core import (
    Environment,
    InvalidTypeError,
    InvalidValueError,
    Task,
    ToolCall,
    ToolResult,
    UsageError,
    as_async,
    tool,
)
from omnienv.envs.wordle import Wordle
from omnienv.rollout import (
    Episode,
    EpisodePlan,
    arun_episode,
    arun_episodes,
    make_policy,
    plan_episodes,
    rollout,
    summarize,
)


def test_solver_wins_the_test_split(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    plans = plan_episodes(Wordle, 50, "test")  # the 200-episode win rate is `omnienv rollout`'s own test
    summary = rollout(Wordle, make_policy("solver", Wordle), plans, out=out, concurrency=4)
    assert summary.success_rate is not None and summary.success_rate >= 0.99
    assert summary.failures == 0 and summary.mean_reward > 1.0
    lines = out.read_bytes().splitlines()
    assert len(lines) == 50
    records = [orjson.loads(line) for line in lines]
    assert sorted(r["index"] for r in records) == list(range(50))
    first = Episode.from_dict(records[0])
    assert first.to_dict() == records[0]
    assert records[0]["steps"][0]["call"]["name"] == "guess"
    assert {"task_id", "seed", "reward", "done", "failure", "seconds", "turns"} <= set(records[0])


def test_plans_are_reproducible() -> None:
    plans = plan_episodes(Wordle, 5, "test", seed=10)
    assert [p.seed for p in plans] == [10, 11, 12, 13, 14]
    assert plans[0].task_id == Wordle.tasks("test")[0].id
    assert plan_episodes(Wordle, 2, None)[1] == EpisodePlan(1, None, 1)


def test_random_policy_plays_and_loses() -> None:
    summary = rollout(Wordle, make_policy("random", Wordle, seed=3), plan_episodes(Wordle, 10, "test"))
    assert summary.failures == 0 and summary.success_rate is not None and summary.success_rate < 0.5


def test_unknown_policy_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"Did you mean 'solver'.*Choices: random, solver"):
        make_policy("solvr", Wordle)


class Flaky(Environment):
    """Crashes on some episodes."""

    splits = ("train",)
    max_turns = 3

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return [Task(f"train/{i}", "train", {"crash": i % 2 == 1}) for i in range(4)]

    def setup(self, task: Task | None, rng: random.Random) -> str:
        self.crash = bool(task and task.data["crash"])
        return "go"

    @tool
    def move(self) -> ToolResult:
        """Move."""
        if self.crash:
            raise RuntimeError("sandbox died")
        return ToolResult.of("ok", reward=1.0, done=True)


def test_failures_are_counted_apart_never_averaged() -> None:
    summary = rollout(Flaky, make_policy("random", Flaky), plan_episodes(Flaky, 4, "train"))
    assert summary.failures == 2 and summary.scored == 2
    assert summary.mean_reward == 1.0


class SlowPolicy:
    name = "slow"

    async def act(self, episode: Episode) -> ToolCall:
        await asyncio.sleep(30)
        raise AssertionError("unreachable")


class BrokenPolicy:
    name = "broken"

    async def act(self, episode: Episode) -> ToolCall:
        raise ValueError("model said nonsense")


def test_deadline_and_policy_crash_are_failures() -> None:
    from omnienv.core import as_async

    async def main() -> tuple[Episode, Episode]:
        env = as_async(Flaky())
        slow = await arun_episode(env, SlowPolicy(), EpisodePlan(0, "train/0", 0), deadline_s=0.05)
        broken = await arun_episode(env, BrokenPolicy(), EpisodePlan(1, "train/0", 1))
        return slow, broken

    slow, broken = asyncio.run(main())
    assert slow.failure is not None and slow.failure.kind == "timeout"
    assert broken.failure is not None and broken.failure.kind == "policy"
    assert "model said nonsense" in broken.failure.message
    assert summarize([slow, broken]).scored == 0


def test_a_file_of_another_plan_is_not_resumed(tmp_path: Path) -> None:
    """Episodes are matched by index: another --seed or --split would mix two runs in one file."""
    from omnienv.core import UsageError

    out = tmp_path / "t.jsonl"
    solver = make_policy("solver", Wordle)
    rollout(Wordle, solver, plan_episodes(Wordle, 3, "test"), out=out)
    for other in (plan_episodes(Wordle, 5, "test", seed=7), plan_episodes(Wordle, 5, "train")):
        with pytest.raises(UsageError, match="written by another plan"):
            rollout(Wordle, solver, other, out=out, resume=True)
    summary = rollout(Wordle, solver, plan_episodes(Wordle, 5, "test"), out=out, resume=True)
    assert summary.episodes == 5 and len(out.read_bytes().splitlines()) == 5


@pytest.mark.parametrize("policy", ["solver", make_policy("solver", Wordle)()])
def test_a_policy_given_where_a_factory_of_them_belongs_is_refused_naming_the_fix(
    policy: object, tmp_path: Path
) -> None:
    out = tmp_path / "kept.jsonl"
    rollout(Wordle, make_policy("solver", Wordle), plan_episodes(Wordle, 2, "test"), out=out)
    kept = out.read_bytes()
    with pytest.raises(UsageError, match=r"make_policy must make a fresh Policy for each worker.*make_policy\(name"):
        rollout(Wordle, policy, plan_episodes(Wordle, 2, "test"), out=out)  # type: ignore[arg-type]
    assert out.read_bytes() == kept  # refused before the file was opened: nothing is lost


def _episodes(**arguments: Any) -> list[Episode]:
    async def main() -> list[Episode]:
        return [episode async for episode in arun_episodes(**arguments)]

    return asyncio.run(main())


_SOLVER = make_policy("solver", Wordle)
_PLANS = [EpisodePlan(0, None, 0)]


@pytest.mark.parametrize(
    ("call", "error", "said"),
    [
        (
            lambda: plan_episodes("wordle", 2, "test"),  # type: ignore[arg-type]
            InvalidTypeError,
            "plan_episodes: env_class must be an Environment class, got str 'wordle': "
            "use omnienv.load_environment('wordle')",
        ),
        (
            lambda: plan_episodes(Wordle(), 2, None),  # type: ignore[arg-type]
            InvalidTypeError,
            "pass its class, Wordle, not an instance",
        ),
        (
            lambda: plan_episodes(Wordle, -1, None),
            InvalidValueError,
            "invalid value for episodes: -1 is not in the range x>=0",
        ),
        (lambda: plan_episodes(Wordle, "3", None), InvalidTypeError, "episodes must be a whole number"),  # type: ignore[arg-type]
        (lambda: plan_episodes(Wordle, 2, None, "1"), InvalidTypeError, "seed must be a whole number"),  # type: ignore[arg-type]
        (lambda: plan_episodes(Wordle, 2, 5), InvalidTypeError, "split must be a split's name"),  # type: ignore[arg-type]
        (
            lambda: make_policy("solver", "wordle"),  # type: ignore[arg-type]
            InvalidTypeError,
            "make_policy: env_class must be an Environment class, got str 'wordle': "
            "use omnienv.load_environment('wordle')",
        ),
        (lambda: make_policy(None, Wordle), InvalidTypeError, "name must be a policy's name"),  # type: ignore[arg-type]
        (
            lambda: rollout("wordle", _SOLVER, _PLANS),  # type: ignore[arg-type]
            InvalidTypeError,
            "rollout: env_class must be an Environment class, got str 'wordle'",
        ),
        (
            lambda: rollout(Wordle, _SOLVER, _PLANS, concurrency=0),
            InvalidValueError,
            "rollout: invalid value for concurrency: 0 is not in the range x>=1",
        ),
        (
            lambda: rollout(Wordle, _SOLVER, _PLANS, concurrency="2"),  # type: ignore[arg-type]
            InvalidTypeError,
            "concurrency must be a whole number",
        ),
        (
            lambda: rollout(Wordle, _SOLVER, 3),  # type: ignore[arg-type]
            InvalidTypeError,
            "plans must be a list of EpisodePlans, got int 3: use plan_episodes(env_class, 3, split, seed)",
        ),
        (lambda: rollout(Wordle, _SOLVER, _PLANS, deadline_s=0), InvalidValueError, "deadline_s must be > 0"),
        (lambda: rollout(Wordle, _SOLVER, _PLANS, out=5), InvalidTypeError, "out must be a path"),  # type: ignore[arg-type]
        (
            lambda: _episodes(make_env=Wordle, make_policy=_SOLVER, plans=_PLANS),
            InvalidTypeError,
            "make_env must make an AsyncEnv, got the class Wordle: pass lambda: omnienv.as_async(Wordle())",
        ),
        (
            lambda: _episodes(make_env="wordle", make_policy=_SOLVER, plans=_PLANS),
            InvalidTypeError,
            "make_env must be a function that makes an AsyncEnv",
        ),
        (
            lambda: _episodes(make_env=lambda: as_async(Wordle()), make_policy=_SOLVER, plans=_PLANS, concurrency=-2),
            InvalidValueError,
            "arun_episodes: invalid value for concurrency: -2 is not in the range x>=1",
        ),
    ],
)
def test_a_wrong_argument_to_a_rollout_entry_point_is_refused_naming_the_fix(
    call: Callable[[], object], error: type[Exception], said: str
) -> None:
    with pytest.raises(error) as caught:
        call()
    assert isinstance(caught.value, UsageError) and said in caught.value.message


def test_an_unknown_policy_is_a_usage_error_and_still_a_value_error() -> None:
    with pytest.raises(InvalidValueError) as caught:
        make_policy("solvr", Wordle)
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, ValueError)


def test_out_may_be_a_str(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    rollout(Wordle, _SOLVER, _PLANS, out=str(out))  # type: ignore[arg-type]
    assert len(out.read_bytes().splitlines()) == 1
