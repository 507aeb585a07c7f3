"""The TRL environment_factory class, without TRL: inspected and driven the way GRPOTrainer does.

TRL 1.16 lists tools with ``inspect.getmembers(type(env), inspect.isfunction)`` minus ``reset``,
``get_reward`` and ``_``-names, reads each schema from the signature and docstring, calls
``reset(**row)`` then the tools with keyword arguments, and ``get_reward()`` once per rollout.
Training itself runs in TRL's own virtualenv (tests/peers/test_trl.py).
"""

from __future__ import annotations

import asyncio
import inspect
import random
import threading
from collections.abc import Iterator
from enum import Enum
from typing import Literal

import pytest
from pydantic import BaseModel

from omnienv.app import create_app
from omnienv.core import (
    AsyncEnvironment,
    Environment,
    EnvironmentDefinitionError,
    Rubric,
    Task,
    TaskError,
    ToolResult,
    tool,
)
from omnienv.dialects.trl import TRLEnvironment, environment_factory
from omnienv.envs.wordle.env import PROMPT, Wordle
from omnienv.server import running

ROW = {"prompt": [{"role": "user", "content": ""}]}


def trl_tools(cls: type) -> list[str]:
    """The tool names TRL would expose, found exactly as grpo_trainer.py finds them."""
    return [
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def tally(env: Counter) -> float:
    """Half the total."""
    return env.total / 2


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    """Not a hint TRL's schema reader knows, so the JSON Schema's reading stands in."""

    x: int
    y: int


class Counter(Environment):
    """Add numbers; the game ends at 3."""

    splits = ("train",)
    max_turns = 5
    rubric = Rubric(tally)
    release = threading.Event()

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return [Task(f"train/{i}", "train", {"start": i}) for i in range(3)]

    def setup(self, task: Task | None, rng: random.Random) -> str:
        if task is not None and task.data["start"] == 2:
            raise RuntimeError("sandbox did not start")
        self.total = task.data["start"] if task else 0
        return f"Start at {self.total}; seed draw {rng.randint(0, 999)}."

    @tool
    def add(self, n: int, note: str = "") -> ToolResult:
        """Add a number to the total.

        Args:
            n: The amount; a negative one crashes the environment.
            note: Free text.
        """
        if n < 0:
            raise RuntimeError("the counter broke")
        self.total += n
        return ToolResult.of(f"total {self.total}", reward=0.25, done=self.total >= 3)

    @tool
    def peek(self) -> str:
        """Show the total."""
        return f"total {self.total}"

    @tool
    def shapes(
        self,
        colour: Colour,
        mode: Literal["a", "b"],
        tags: list[str],
        where: dict[str, int] | None = None,
        point: Point | None = None,
    ) -> str:
        """Exercise type hints.

        Args:
            colour: A colour.
            mode: A mode.
            tags: Some tags.
            where: A mapping.
            point: Not JSON.
        """
        return "ok"


class AsyncCounter(AsyncEnvironment):
    """The same game with coroutines."""

    rubric = Rubric(tally)

    async def setup(self, task: Task | None, rng: random.Random) -> str:
        self.total = 0
        await asyncio.sleep(0)
        return "Reach 3."

    @tool
    async def add(self, n: int) -> ToolResult:
        """Add a number.

        Args:
            n: The amount.
        """
        self.total += n
        return ToolResult.of(f"total {self.total}", reward=0.25, done=self.total >= 3)


# -- what TRL sees -----------------------------------------------------------------------------


def test_only_tools_are_public_methods() -> None:
    cls = environment_factory(Counter)
    assert issubclass(cls, TRLEnvironment) and cls.__name__ == "Counter"
    assert sorted(trl_tools(cls)) == ["add", "peek", "shapes"]
    assert trl_tools(environment_factory("wordle")) == ["get_history", "guess"]
    assert trl_tools(TRLEnvironment) == []
    assert callable(cls.reset) and callable(cls.get_reward)


def test_methods_carry_signature_and_google_docstring() -> None:
    add = environment_factory(Counter).add
    assert str(inspect.signature(add)) == "(self, n: int, note: str = '')"
    assert inspect.getdoc(add) == (
        "Add a number to the total.\n\nArgs:\n    n: The amount; a negative one crashes "
        "the environment.\n    note: Free text."
    )
    assert add.__annotations__ == {"n": int, "note": str}
    shapes = environment_factory(Counter).shapes
    hints = shapes.__annotations__
    assert hints["colour"] is Colour and hints["mode"] == Literal["a", "b"] and hints["tags"] == list[str]
    assert hints["where"] == dict[str, int] | None
    assert hints["point"] == dict | None  # not a hint TRL reads: the JSON Schema's reading instead
    assert inspect.getdoc(environment_factory(Counter).peek) == "Show the total."


def test_bad_tool_names_and_arguments_are_refused() -> None:
    class Clash(Environment):
        """Its tool is named like TRL's reward hook."""

        @tool(name="get_reward")
        def score(self) -> str:
            """Score."""
            return ""

    with pytest.raises(EnvironmentDefinitionError, match=r"rename the tool with @tool\(name=...\)"):
        environment_factory(Clash)
    with pytest.raises(TypeError, match="fresh instance per rollout"):
        environment_factory(Counter())  # type: ignore[arg-type]


# -- driven like TRL drives it -----------------------------------------------------------------


def test_wordle_episode_and_reward_match_the_environment() -> None:
    env = environment_factory("wordle", name="WordleEnv")()
    assert type(env).__name__ == "WordleEnv"
    assert env.reset(**ROW, task_id="test/0003") == PROMPT
    assert env.reset(prompt=[{"role": "user", "content": "Hi"}], task_id="test/0003") == "\n\n" + PROMPT
    answer = Wordle.task_index().find("test/0003", "test").answer
    wrong = next(w for w in ("crane", "slate", "pious") if w != answer)
    assert env.guess(word="qqqqq").endswith("did not use an attempt.")  # the model's mistake: an answer
    assert wrong.upper() in env.guess(wrong)  # positional calls work too
    assert "Correct" in env.guess(word=answer)
    assert env.guess(word=answer) == "The episode is over; no more actions are taken."
    assert env.get_reward() == pytest.approx(1.0 + 0.5 * (1 - 2 / 6))
    assert env.failure is None


def test_unfinished_episode_is_scored_by_the_rubric() -> None:
    env = environment_factory(Counter)()
    env.reset(**ROW, task_id="train/0")
    assert env.add(n=1) == "total 1"
    assert env.get_reward() == pytest.approx(0.25 + 0.5)  # step reward + rubric on the truncated episode
    assert env.get_reward() == pytest.approx(0.75)  # once
    env.reset(**ROW, task_id="train/1", seed=4)
    assert env.add(n=2) == "total 3"
    assert env.get_reward() == pytest.approx(0.25 + 1.5)
    assert environment_factory(Counter)().get_reward() is None  # never reset: nothing to score


def test_seed_and_task_come_from_the_row() -> None:
    env = environment_factory(Counter)()
    first = env.reset(**ROW, task_id="train/1", seed=7)
    assert first.startswith("Start at 1") and env.reset(**ROW, task_id="train/1", seed=7) == first
    with pytest.raises(TaskError, match="no task 'train/9'"):
        env.reset(**ROW, task_id="train/9")


def test_failures_are_masked_not_scored() -> None:
    env = environment_factory(Counter)()
    env.reset(**ROW, task_id="train/0")
    env.add(n=1)
    assert "void" in env.add(n=-1)
    assert env.failure is not None and "the counter broke" in env.failure.message
    assert "void" in env.peek()
    assert env.get_reward() is None
    assert "void" in env.reset(**ROW, task_id="train/2")  # setup crashed
    assert env.failure is not None and env.get_reward() is None
    env.reset(**ROW, task_id="train/0")  # the pooled instance recovers on the next row
    assert env.failure is None and env.add(n=3) == "total 3" and env.get_reward() == pytest.approx(1.75)


def test_async_environment() -> None:
    env = environment_factory(AsyncCounter)()
    assert env.reset(**ROW) == "Reach 3."
    assert env.add(n=1) == "total 1"
    assert env.get_reward() == pytest.approx(0.25 + 0.5)
    env._close()


# -- a served environment ----------------------------------------------------------------------


class Sleepy(Environment):
    """A tool that overruns the server's step deadline."""

    blocking = True

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "ready"

    @tool
    def nap(self, seconds: float) -> str:
        """Sleep.

        Args:
            seconds: How long.
        """
        Counter.release.wait(seconds)
        return "rested"


@pytest.fixture
def wordle_url() -> Iterator[str]:
    with running(create_app(Wordle)) as url:
        yield url


def test_remote_wordle_matches_in_process(wordle_url: str) -> None:
    cls = environment_factory(wordle_url)
    assert cls.__name__ == "Wordle" and sorted(trl_tools(cls)) == ["get_history", "guess"]
    guess = cls.guess
    assert str(inspect.signature(guess)) == "(self, *, word: str)"
    assert inspect.getdoc(guess) == "Guess the hidden word.\n\nArgs:\n    word: A five-letter English word."
    env = cls()
    try:
        assert env.reset(**ROW, task_id="test/0003") == PROMPT
        answer = Wordle.task_index().find("test/0003", "test").answer
        assert "Correct" in env.guess(word=answer)
        assert env.get_reward() == pytest.approx(1.0 + 0.5 * (1 - 1 / 6))
        env.reset(**ROW, task_id="test/0003")
        assert env.guess(word="qqqqq").endswith("did not use an attempt.")
        with pytest.raises(TaskError):
            env.reset(**ROW, task_id="test/9999")
    finally:
        env._close()


def test_an_episode_the_trainer_ends_early_scores_the_same_served_and_in_process() -> None:
    local = environment_factory(Counter)()
    local.reset(**ROW, task_id="train/1", seed=3)
    assert local.add(n=1) == "total 2"
    expected = local.get_reward()
    assert expected == pytest.approx(0.25 + 1.0)  # the step's reward and the rubric's, on the cut episode
    with running(create_app(Counter)) as url:
        served = environment_factory(url)()
        try:
            served.reset(**ROW, task_id="train/1", seed=3)
            assert served.add(n=1) == "total 2"
            assert served.get_reward() == pytest.approx(expected)
            assert served.get_reward() == pytest.approx(expected)  # scored once
        finally:
            served._close()


def test_remote_step_timeout_is_a_masked_failure() -> None:
    Counter.release.clear()
    try:
        with running(create_app(Sleepy, step_timeout=0.2)) as url:
            env = environment_factory(url)()
            try:
                env.reset(**ROW)
                assert "void" in env.nap(seconds=30)
                assert env.failure is not None
                assert env.get_reward() is None
            finally:
                env._close()
    finally:
        Counter.release.set()


def test_a_full_server_masks_the_rollout_it_refuses() -> None:
    """docs/trl.md: a full server refuses the session, and that rollout is masked as failed,
    never scored 0; the probe ``environment_factory`` makes of the URL holds no session."""
    with running(create_app(Wordle, max_sessions=1)) as url:
        cls = environment_factory(url)
        held, refused = cls(), cls()
        try:
            assert held.reset(**ROW, task_id="test/0003") == PROMPT
            assert "void" in refused.reset(**ROW, task_id="test/0003")
            assert refused.failure is not None and refused.failure.kind == "capacity_reached", refused.failure
            assert refused.get_reward() is None
            assert "left" in held.guess(word="crane") and held.failure is None  # the held session plays on
        finally:
            held._close()
            refused._close()
