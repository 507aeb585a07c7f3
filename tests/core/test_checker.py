from __future__ import annotations

import asyncio
import random
import time

import pytest

from omnienv.core import (
    AsyncEnvironment,
    Environment,
    InvalidTypeError,
    Task,
    ToolResult,
    acheck_env,
    check_env,
    tool,
)
from omnienv.core.checker import CheckFailed
from omnienv.envs.echo import Echo
from omnienv.envs.wordle import Wordle


class Riddle(Environment):
    """A riddle with a secret answer."""

    splits = ("train",)
    max_turns = 4

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return [Task("train/0", "train", answer="pumpkin"), Task("train/1", "train", answer="lantern")]

    def setup(self, task: Task | None, rng: random.Random) -> str:
        self.answer = task.answer if task else "pumpkin"
        return "What am I?"

    @tool
    def answer_riddle(self, guess: str) -> ToolResult:
        """Answer.

        Args:
            guess: Your answer.
        """
        return ToolResult.of("yes" if guess == self.answer else "no", done=guess == self.answer)


def failed(report: object) -> dict[str, str]:
    return {r.name: r.message for r in report.failures}  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", [Wordle, Echo, Riddle])
def test_reference_environments_pass(cls: type[Environment]) -> None:
    report = check_env(cls)
    assert report.ok, failed(report)


def test_leaking_the_answer_is_caught() -> None:
    class Leaky(Riddle):
        def state_fields(self) -> dict[str, object]:
            return {"hint": self.answer}

    assert "the answer appears in the state" in failed(check_env(Leaky))["episodes_end_and_stay_ended"]


def test_unseeded_randomness_is_caught() -> None:
    class Unseeded(Riddle):
        def setup(self, task: Task | None, rng: random.Random) -> str:
            super().setup(task, rng)
            return f"What am I? ({random.random()})"

    assert "draw randomness from setup's rng" in failed(check_env(Unseeded))["seeding_is_deterministic"]


def test_endless_episode_is_caught() -> None:
    class Endless(Riddle):
        max_turns = None

        def answer_riddle(self, guess: str) -> ToolResult:  # type: ignore[override]
            return ToolResult.of("keep going")

    assert "set max_turns" in failed(check_env(Endless))["episodes_end_and_stay_ended"]


def test_shared_class_state_is_caught() -> None:
    class Shared(Riddle):
        log: list[str] = []  # noqa: RUF012 - the bug under test

        @tool
        def note(self, text: str) -> str:
            """Remember.

            Args:
                text: Anything.
            """
            self.log.append(text)
            return "ok"

        def state_fields(self) -> dict[str, object]:
            return {"notes": len(self.log)}

    report = check_env(Shared)
    assert "keep episode state on self" in failed(report)["sessions_are_isolated"]
    with pytest.raises(CheckFailed, match="sessions_are_isolated"):
        report.raise_for_failures()


def test_crashing_tool_is_caught() -> None:
    class Crashy(Riddle):
        def answer_riddle(self, guess: str) -> ToolResult:  # type: ignore[override]
            raise KeyError(guess)

    assert "failed with env_error" in failed(check_env(Crashy))["episodes_end_and_stay_ended"]


def test_answer_in_the_prompt_is_caught() -> None:
    class Telling(Riddle):
        def setup(self, task: Task | None, rng: random.Random) -> str:
            super().setup(task, rng)
            return f"What am I? (It is {self.answer}.)"

    assert "setup puts Task.answer in the prompt" in failed(check_env(Telling))["prompt_hides_the_answer"]


def test_a_prompt_naming_every_option_is_not_a_leak() -> None:
    class Choice(Riddle):
        def setup(self, task: Task | None, rng: random.Random) -> str:
            super().setup(task, rng)
            return "What am I: a pumpkin or a lantern?"

    assert check_env(Choice).ok


def test_reset_that_keeps_the_last_episode_is_caught() -> None:
    class Forgetful(Riddle):
        guesses = 0

        def answer_riddle(self, guess: str) -> ToolResult:  # type: ignore[override]
            self.guesses += 1
            return super().answer_riddle(guess)

        def state_fields(self) -> dict[str, object]:
            return {"guesses": self.guesses}

    assert "set every episode field in setup" in failed(check_env(Forgetful))["reset_starts_afresh"]


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        (lambda split: [Task("train/0", split, {"x": random.random()})], "different tasks on a second call"),
        (lambda split: [Task("train/0", split, answer="a"), Task("train/0", split, answer="b")], "appears twice"),
        (lambda split: [Task("train/0", "test", answer="pumpkin")], "says split='test'"),
        (lambda split: [], "declared but tasks() returns none"),
    ],
)
def test_tasks_that_break_the_index_are_caught(tasks: object, expected: str) -> None:
    class Badly(Riddle):
        @classmethod
        def tasks(cls, split: str) -> list[Task]:
            return tasks(split)  # type: ignore[operator, no-any-return]

    assert expected in failed(check_env(Badly))["tasks_are_stable"]


def test_state_fields_json_cannot_carry_are_named() -> None:
    class Unserialisable(Riddle):
        def state_fields(self) -> dict[str, object]:
            return {"seen": {"pumpkin"}}

    assert "keep state_fields() to plain JSON values" in failed(check_env(Unserialisable))["results_survive_json"]


def test_an_async_tool_that_blocks_the_event_loop_is_caught() -> None:
    class Sleepy(AsyncEnvironment):
        """Wait a moment."""

        max_turns = 2

        async def setup(self, task: Task | None, rng: random.Random) -> str:
            self.waited = False
            return "Call `wait`."

        @tool
        async def wait(self) -> str:
            """Wait."""
            if not self.waited:  # once per episode: the check stays quick
                time.sleep(0.7)  # the mistake: asyncio.sleep, or a blocking call off the loop
                self.waited = True
            return "waited"

    assert "held the event loop for 0.7 s" in failed(check_env(Sleepy))["calls_leave_the_event_loop_free"]


def test_omnienvs_own_first_time_work_is_not_blamed_on_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool's argument model is built at its first wrong call, and building the first imports
    pydantic (0.1 s here, over 0.5 s on a loaded machine): that is omnienv's, done before the watch."""
    from omnienv.core import tools

    build = tools._arguments_model

    def slow_build(*args: object) -> object:
        time.sleep(0.7)
        return build(*args)  # type: ignore[arg-type]

    class Counted(Echo):
        name = "counted"

        @tool
        def count(self, times: int, word: str = "a") -> str:
            """Say a word a number of times.

            Args:
                times: How many times.
                word: The word.
            """
            return word * max(0, min(times, 10))

    monkeypatch.setattr(tools, "_arguments_model", slow_build)
    report = check_env(Counted)
    assert report.ok, failed(report)


class TwoSplits(Riddle):
    """A riddle with a train and a test split."""

    splits = ("train", "test")
    listed: dict[str, list[Task]] = {  # noqa: RUF012 - read-only task lists
        "train": [Task("train/0", "train", answer="pumpkin"), Task("train/1", "train", answer={"a": [1, 2]})],
        "test": [Task("test/0", "test", answer="lantern"), Task("test/1", "test", answer="")],
    }

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return cls.listed[split]


def test_disjoint_splits_pass() -> None:
    """No id, and no answer to the same data, in two splits; an answer to other data (a number two
    questions share) or one of a few options (several tasks of a split have it) is no leak."""

    class Disjoint(TwoSplits):
        listed = {  # noqa: RUF012
            "train": [
                *TwoSplits.listed["train"],
                Task("train/2", "train", answer=""),
                Task("train/3", "train", {"q": "2 + 2"}, answer=4),
                Task("train/4", "train", answer="door"),
                Task("train/5", "train", answer="door"),
            ],
            "test": [
                *TwoSplits.listed["test"],
                Task("test/2", "test"),
                Task("test/3", "test", answer={"a": [1]}),
                Task("test/4", "test", {"q": "2 * 2"}, answer=4),
                Task("test/5", "test", answer="door"),
            ],
        }

    report = check_env(Disjoint)
    assert report.ok, failed(report)
    assert "splits_are_disjoint" in [r.name for r in report.results]


def test_a_task_that_says_another_split_is_caught() -> None:
    class Misfiled(TwoSplits):
        listed = {"train": TwoSplits.listed["train"], "test": [Task("test/0", "train", answer="lantern")]}  # noqa: RUF012

    message = failed(check_env(Misfiled))["splits_are_disjoint"]
    assert "'test/0' is listed in 'test' but says split='train'" in message
    assert "set each Task's split to the split whose tasks() returns it" in message


def test_a_task_id_in_two_splits_is_caught() -> None:
    class Shared(TwoSplits):
        listed = {  # noqa: RUF012
            "train": [Task(f"q{i}", "train", answer=f"a{i}") for i in range(5)],
            "test": [Task(f"q{i}", "test", answer=f"b{i}") for i in range(5)],
        }

    message = failed(check_env(Shared))["splits_are_disjoint"]
    assert message.startswith("5 task ids in two splits ('q0' is in train and test, 'q1' is in train and test, ")
    assert "and 2 more): list each task in one split only" in message


def test_an_answer_in_two_splits_is_caught() -> None:
    class Contaminated(TwoSplits):
        listed = {  # noqa: RUF012
            "train": [
                Task("train/0012", "train", answer="crane"),
                Task("train/0013", "train", answer={"b": 1, "a": 2}),
            ],
            "test": [Task("test/0003", "test", answer="crane"), Task("0004", "test", answer={"a": 2, "b": 1})],
        }

    message = failed(check_env(Contaminated))["splits_are_disjoint"]
    assert "2 answers in two splits for the same data ('crane' is the answer of train/0012 and test/0003, " in message
    assert '{"a": 2, "b": 1} is the answer of train/0013 and test/0004)' in message
    assert "would have seen the other's answers: keep each task to one split" in message


@pytest.mark.parametrize(
    ("env_class", "said"),
    [
        (
            "wordle",
            "check_env: env_class must be an Environment class, got str 'wordle': "
            "use omnienv.load_environment('wordle')",
        ),
        (None, "got NoneType None: pass an Environment subclass"),
        (Echo(), "pass its class, Echo, not an instance"),
    ],
)
def test_check_env_refuses_what_is_not_an_environment_class_naming_the_fix(env_class: object, said: str) -> None:
    with pytest.raises(InvalidTypeError) as caught:
        check_env(env_class)  # type: ignore[arg-type]
    assert said in caught.value.message


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (Echo, "got the class Echo: pass lambda: omnienv.as_async(Echo())"),
        ("echo", "make must be a function that makes an AsyncEnv"),
    ],
)
def test_acheck_env_refuses_what_cannot_make_an_environment(make: object, said: str) -> None:
    with pytest.raises(InvalidTypeError) as caught:
        asyncio.run(acheck_env(make))  # type: ignore[arg-type]
    assert said in caught.value.message
