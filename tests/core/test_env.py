from __future__ import annotations

import asyncio
import os
import random
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from omnienv.core import (
    AgentCausedEnd,
    AsyncEnvironment,
    Environment,
    EnvironmentDefinitionError,
    EnvironmentFailure,
    EpisodeOverError,
    InvalidTypeError,
    NotResetError,
    Rubric,
    State,
    Task,
    TaskError,
    ToolCall,
    ToolError,
    ToolResult,
    UsageError,
    as_async,
    as_sync,
    tool,
)


def finished_fast(env: Counter) -> float:
    return 1.0 if env.count >= 3 else 0.0


def penalty(env: Counter) -> float:
    return -0.1 * env.mistakes


class Counter(Environment):
    """Count to three."""

    splits = ("train",)
    max_turns = 5
    rubric = Rubric(finished_fast, penalty, weights=[1.0, 2.0])

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return [Task(f"train/{i}", "train", {"start": i}, answer=f"secret{i}") for i in range(3)]

    def setup(self, task: Task | None, rng: random.Random) -> str:
        assert task is not None
        self.count = task.data["start"]
        self.mistakes = 0
        self.noise = rng.random()
        return f"start at {self.count}"

    @tool
    def inc(self, by: int = 1) -> ToolResult:
        """Increment.

        Args:
            by: Step size, 1 or 2.
        """
        if by not in (1, 2):
            self.mistakes += 1
            raise ToolError("by must be 1 or 2")
        self.count += by
        return ToolResult.of(str(self.count), reward=0.25, done=self.count >= 3)

    @tool
    def crash(self) -> str:
        """Break."""
        raise RuntimeError("disk on fire")

    @tool
    def self_destruct(self) -> str:
        """The agent ends its own episode (say, its code killed its kernel)."""
        raise AgentCausedEnd("your code ended the kernel", reason="kernel_died")

    def state_fields(self) -> dict[str, object]:
        return {"count": self.count}


def test_step_before_reset_and_after_end() -> None:
    env = Counter()
    with pytest.raises(NotResetError, match="call reset"):
        env.step(ToolCall("inc"))
    env.reset(task="train/1")
    result = env.step(ToolCall("inc", {"by": 2}))
    assert result.done and not result.truncated
    with pytest.raises(EpisodeOverError, match="call reset"):
        env.step(ToolCall("inc"))


def test_final_reward_adds_weighted_rubric_to_last_step() -> None:
    env = Counter()
    env.reset(task="train/0")
    assert env.step(ToolCall("inc", {"by": 5})).observation.is_error
    assert env.step(ToolCall("inc")).reward == 0.25
    last = env.step(ToolCall("inc", {"by": 2}))
    assert last.done
    assert last.info["rubric"] == {"finished_fast": 1.0, "penalty": pytest.approx(-0.1)}
    assert last.reward == pytest.approx(0.25 + 1.0 - 0.2)
    assert env.episode_reward == pytest.approx(0.5 + 0.8)


def test_agent_mistakes_become_error_observations_and_count_turns() -> None:
    env = Counter()
    env.reset(task="train/0")
    unknown = env.step(ToolCall("incc"))
    assert unknown.observation.is_error
    assert unknown.info["error"]["code"] == "UNKNOWN_TOOL"
    assert "Did you mean 'inc'?" in unknown.observation.text
    bad = env.step(ToolCall("inc", {"by": "lots"}))
    assert bad.info["error"]["code"] == "INVALID_ARGUMENTS"
    tool_error = env.step(ToolCall("inc", {"by": 7}))
    assert tool_error.info["error"] == {"code": "TOOL_ERROR", "message": "by must be 1 or 2"}
    assert env.state().step_count == 3


@pytest.mark.parametrize("name", [5, None, ["inc"]])
def test_a_tool_name_that_is_not_a_string_is_the_agents_mistake_not_a_failure(name: Any) -> None:
    env = Counter()
    env.reset(task="train/0")
    result = env.step(ToolCall(name))
    assert result.failure is None and not result.truncated
    assert result.info["error"]["code"] == "UNKNOWN_TOOL"
    assert "Available tools: inc" in result.observation.text
    assert env.step(ToolCall("inc")).observation.text == "1"  # the episode goes on


@pytest.mark.parametrize("call", ["inc", {"name": "inc"}, None])
def test_a_step_given_what_is_not_a_tool_call_is_refused_and_the_episode_goes_on(call: Any) -> None:
    env = Counter()
    env.reset(task="train/0")
    with pytest.raises(UsageError, match=r"step\(\) takes a ToolCall.*pass ToolCall\('inc'"):
        env.step(call)
    assert env.step(ToolCall("inc")).observation.text == "1"
    assert env.state().step_count == 1

    async def main() -> None:
        async_env = AsyncCounter()
        await async_env.reset()
        with pytest.raises(UsageError, match="takes a ToolCall"):
            await async_env.step(call)
        assert (await async_env.step(ToolCall("inc"))).observation.text == "1"

    asyncio.run(main())


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"seed": "x"}, "seed must be an integer or None, got str 'x'"),
        ({"seed": 1.5}, "seed must be an integer or None"),
        ({"task": 5}, "task must be a Task, a task id such as 'test/0003', or None, got int 5"),
        ({"task": {"id": "train/1"}}, "task must be a Task, a task id"),
    ],
)
def test_a_reset_given_a_task_or_seed_of_the_wrong_type_is_refused_and_the_episode_goes_on(
    arguments: dict[str, Any], expected: str
) -> None:
    env = Counter()
    env.reset(task="train/0")
    with pytest.raises(UsageError, match=re.escape(expected)):
        env.reset(**arguments)
    with pytest.raises(UsageError, match=re.escape(expected)):
        env.preview(**arguments)
    assert env.step(ToolCall("inc")).observation.text == "1"  # the old episode is untouched
    assert env.reset(seed=3).text.startswith("start at")


def test_turn_limit_truncates_and_scores() -> None:
    env = Counter()
    env.reset(task="train/0")
    results = [env.step(ToolCall("inc", {"by": 9})) for _ in range(5)]
    assert [r.truncated for r in results] == [False] * 4 + [True]
    assert results[-1].info["rubric"]["penalty"] == pytest.approx(-0.5)
    assert env.state().reward == pytest.approx(env.episode_reward)  # the score, once the episode is over
    with pytest.raises(EpisodeOverError):
        env.step(ToolCall("inc"))


def test_crash_is_a_failure_not_a_score() -> None:
    env = Counter()
    env.reset(task="train/0")
    result = env.step(ToolCall("crash"))
    assert result.failure is not None
    assert "RuntimeError: disk on fire" in result.failure.message
    assert "disk on fire" not in result.observation.text  # the agent sees no internals
    assert result.over and env.failure == result.failure
    state = env.state()
    assert state.truncated and state.reward is None and state.failure == result.failure
    assert State.from_dict(state.to_dict()) == state  # the wire carries the void episode as it is
    with pytest.raises(EpisodeOverError):
        env.step(ToolCall("inc"))


def test_what_the_agent_caused_is_scored_not_masked() -> None:
    env = Counter()
    env.reset(task="train/2")
    result = env.step(ToolCall("self_destruct"))
    assert result.failure is None and env.failure is None
    assert result.done and not result.truncated and result.over
    assert result.info["ended_by_agent"] == {"reason": "kernel_died", "message": "your code ended the kernel"}
    assert result.info["rubric"] == {"finished_fast": 0.0, "penalty": 0.0}
    assert result.observation.is_error and "ended the kernel" in result.observation.text
    assert env.episode_reward == result.reward == 0.0
    with pytest.raises(EpisodeOverError):
        env.step(ToolCall("inc"))


def test_rubric_crash_is_a_failure() -> None:
    def broken(env: object) -> float:
        raise ValueError("bad rubric")

    class Broken(Counter):
        rubric = Rubric(broken)

    env = Broken()
    env.reset(task="train/2")
    result = env.step(ToolCall("inc"))
    assert result.failure is not None and "rubric raised ValueError" in result.failure.message


@pytest.mark.parametrize("reward", [float("nan"), float("inf"), -float("inf"), "1"])
def test_a_reward_that_is_not_a_finite_number_is_the_environments_failure(reward: object) -> None:
    class Poisoned(Counter):
        @tool
        def score(self) -> ToolResult:
            """Return a broken reward."""
            return ToolResult.of("scored", reward=reward)  # type: ignore[arg-type]

    class PoisonedAsync(AsyncCounter):
        @tool
        async def score(self) -> ToolResult:
            """Return a broken reward."""
            return ToolResult.of("scored", reward=reward)  # type: ignore[arg-type]

    env = Poisoned()
    env.reset(task="train/0")
    result = env.step(ToolCall("score"))
    assert result.failure is not None and result.over and result.reward == 0.0
    assert env.episode_reward == 0.0 and env.state().reward is None
    if isinstance(reward, float):
        assert "not a finite number" in result.failure.message

    async def main() -> None:
        env = PoisonedAsync()
        await env.reset()
        result = await env.step(ToolCall("score"))
        assert result.failure is not None and result.over and (await env.state()).reward is None

    asyncio.run(main())


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_rubric_that_is_not_a_finite_number_is_a_failure(value: float) -> None:
    def poisoned(env: object) -> float:
        return value

    class Poisoned(Counter):
        rubric = Rubric(poisoned)

    env = Poisoned()
    env.reset(task="train/2")
    result = env.step(ToolCall("inc"))
    assert result.failure is not None and "returned" in result.failure.message
    assert "not a finite number" in result.failure.message and env.state().reward is None


def test_a_step_after_a_reset_whose_setup_failed_never_goes_on_with_the_old_episode() -> None:
    """``setup`` may have changed the environment halfway: the old episode must not be played on."""

    class Flaky(Counter):
        fail_next = False

        def setup(self, task: Task | None, rng: random.Random) -> str:
            self.count = 100  # half-reset
            if self.fail_next:
                raise OSError("no sandbox")
            return super().setup(task, rng)

    class FlakyAsync(AsyncCounter):
        fail_next = False

        async def setup(self, task: Task | None, rng: random.Random) -> str:
            if self.fail_next:
                raise OSError("no sandbox")
            return await super().setup(task, rng)

    env = Flaky()
    env.reset(task="train/0")
    env.step(ToolCall("inc"))
    env.fail_next = True
    with pytest.raises(EnvironmentFailure, match="setup failed"):
        env.reset(task="train/0")
    with pytest.raises(NotResetError):
        env.step(ToolCall("inc"))
    env.fail_next = False
    env.reset(task="train/0")
    assert env.step(ToolCall("inc")).observation.text == "1"

    async def main() -> None:
        env = FlakyAsync()
        await env.reset()
        await env.step(ToolCall("inc"))
        env.fail_next = True
        with pytest.raises(EnvironmentFailure):
            await env.reset()
        with pytest.raises(NotResetError):
            await env.step(ToolCall("inc"))

    asyncio.run(main())


def test_setup_crash_raises_environment_failure() -> None:
    class NoSetup(Counter):
        def setup(self, task: Task | None, rng: random.Random) -> str:
            raise OSError("no sandbox")

    with pytest.raises(EnvironmentFailure, match="setup failed: OSError: no sandbox"):
        NoSetup().reset()


def test_a_setup_that_refuses_its_task_is_the_callers_task_error_never_a_failure() -> None:
    """A ``Task`` made by hand that ``setup`` cannot run is the caller's mistake (TaskError), as an unknown
    task id is, never an infrastructure failure; the previous episode ends with it as with any failed setup."""

    class Picky(Counter):
        def setup(self, task: Task | None, rng: random.Random) -> str:
            if task is not None and task.id == "mine/1":
                raise TaskError("no task 'mine/1' here")
            return super().setup(task, rng)

    env = Picky()
    env.reset(task="train/0")
    with pytest.raises(TaskError, match="no task 'mine/1'") as caught:
        env.reset(task=Task("mine/1", "mine"))
    assert not isinstance(caught.value, EnvironmentFailure)
    with pytest.raises(NotResetError):
        env.step(ToolCall("inc"))


def test_tasks_seeding_and_state() -> None:
    first, second = Counter(), Counter()
    assert first.reset(seed=11) == second.reset(seed=11)
    assert first.noise == second.noise and first.task == second.task
    state = first.state()
    assert state.step_count == 0 and state.task_id == first.task.id  # type: ignore[union-attr]
    assert state.reward is None  # no score while the episode runs
    assert state.fields == {"count": first.count}
    assert "secret" not in str(state.to_dict())
    with pytest.raises(TaskError, match="no task 'train/9'"):
        first.reset(task="train/9")
    with pytest.raises(TaskError, match="splits: train"):
        Counter.task_index().find("x", "test")


def test_close_is_idempotent_and_ends_the_episode() -> None:
    env = Counter()
    env.reset()
    env.close()
    env.close()
    with pytest.raises(NotResetError):
        env.step(ToolCall("inc"))


class AsyncCounter(AsyncEnvironment):
    """Async twin."""

    max_turns = 3

    async def setup(self, task: Task | None, rng: random.Random) -> str:
        self.value = 0
        self.closed = False
        return "go"

    @tool
    async def inc(self) -> ToolResult:
        """Increment."""
        await asyncio.sleep(0)
        self.value += 1
        return ToolResult.of(str(self.value), done=self.value == 2)

    @tool
    def peek(self) -> str:
        """Sync tools are fine in async environments."""
        return str(self.value)

    async def teardown(self) -> None:
        self.closed = True


def test_async_twin_shares_the_bookkeeping() -> None:
    async def main() -> None:
        env = AsyncCounter()
        with pytest.raises(NotResetError):
            await env.step(ToolCall("inc"))
        assert (await env.reset()).text == "go"
        assert (await env.step(ToolCall("peek"))).observation.text == "0"
        assert (await env.step(ToolCall("inc"))).observation.text == "1"
        assert (await env.step(ToolCall("inc"))).done
        assert (await env.state()).step_count == 3
        await env.close()
        assert env.closed
        assert as_async(env) is env

    asyncio.run(main())


def test_as_async_runs_blocking_envs_in_the_executor_and_others_inline() -> None:
    seen: list[str] = []

    class Where(Environment):
        """Records its thread."""

        @tool
        def where(self) -> str:
            """Where am I."""
            seen.append(threading.current_thread().name)
            return "here"

    class Inline(Where):
        blocking = False

    async def main() -> None:
        with ThreadPoolExecutor(1, thread_name_prefix="envpool") as pool:
            for cls in (Where, Inline):
                env = as_async(cls(), pool)
                await env.reset()
                await env.step(ToolCall("where"))
                await env.close()

    asyncio.run(main())
    assert seen[0].startswith("envpool") and seen[1] == "MainThread"
    with pytest.raises(TypeError):
        as_async(object())  # type: ignore[arg-type]


def test_a_forked_child_drives_blocking_environments_on_a_pool_of_its_own() -> None:
    """The parent's pool threads are not in a forked child: a pool that still counted them idle
    would queue the child's steps forever."""

    class Ping(Environment):
        @tool
        def ping(self) -> str:
            """Answer at once."""
            return "pong"

    async def steps() -> str:
        env = as_async(Ping())
        await env.reset()
        return (await env.step(ToolCall("ping"))).observation.text

    async def play() -> str:
        return await asyncio.wait_for(steps(), 10)

    assert asyncio.run(play()) == "pong"  # the parent's pool now has an idle thread
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports by its exit status
        try:
            os._exit(0 if asyncio.run(play()) == "pong" else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the forked child's step never ran"


def test_long_blocking_steps_never_hold_up_another_environments_step() -> None:
    """33 environments wait inside a step, more than a pool the size of the cores holds (a default
    executor has at most 32 threads); a 34th environment's step still answers at once."""
    release = threading.Event()

    class Waits(Environment):
        """A blocking step that waits, as a shell command or a test suite does."""

        @tool
        def wait(self) -> str:
            """Wait until released."""
            release.wait(60)
            return "done"

        @tool
        def ping(self) -> str:
            """Answer at once."""
            return "pong"

    async def main() -> None:
        envs = [as_async(Waits()) for _ in range(34)]
        waiting: list[asyncio.Future[Any]] = []
        try:
            for env in envs:
                await env.reset()
            waiting = [asyncio.ensure_future(env.step(ToolCall("wait"))) for env in envs[:33]]
            result = await asyncio.wait_for(envs[33].step(ToolCall("ping")), 10)
            assert result.observation.text == "pong" and not any(step.done() for step in waiting)
        finally:
            release.set()
            await asyncio.gather(*waiting)
            for env in envs:
                await env.close()

    asyncio.run(main())


def test_a_failure_quotes_at_most_the_start_of_a_huge_exception_message() -> None:
    class Loud(Counter):
        @tool
        def shout(self) -> str:
            """Fail with a huge message."""
            raise RuntimeError("x" * 5_000_000)

    env = Loud()
    env.reset(task="train/0")
    result = env.step(ToolCall("shout"))
    assert result.failure is not None and len(result.failure.message) < 2_200
    assert "more characters not shown" in result.failure.message


@pytest.mark.parametrize("returned", [None, 42, {"count": 3}, ["ok", 7]])
def test_a_tool_returning_what_is_not_content_fails_naming_what_to_return(returned: object) -> None:
    class Careless(Counter):
        @tool
        def peek(self) -> Any:
            """Peek."""
            return returned

    env = Careless()
    env.reset(task="train/0")
    result = env.step(ToolCall("peek"))
    assert result.failure is not None and "returns a str, a TextBlock or ImageBlock" in result.failure.message


@pytest.mark.parametrize("value", [None, "1", [1.0]])
def test_a_rubric_returning_what_is_not_a_number_is_a_failure_naming_the_function(value: object) -> None:
    def sloppy(env: object) -> Any:
        return value

    class Sloppy(Counter):
        rubric = Rubric(sloppy)

    env = Sloppy()
    env.reset(task="train/2")
    result = env.step(ToolCall("inc"))
    assert result.failure is not None and "reward function 'sloppy' returned" in result.failure.message


@pytest.mark.parametrize(
    ("attribute", "value", "expected"),
    [("max_turns", 0, "max_turns"), ("max_turns", 2.5, "max_turns"), ("max_turns", "5", "max_turns"),
     ("splits", "train", "splits must be a tuple"), ("splits", ("train", ""), "splits must be a tuple")],
)  # fmt: skip
def test_class_settings_of_the_wrong_kind_fail_at_class_creation(attribute: str, value: object, expected: str) -> None:
    with pytest.raises(EnvironmentDefinitionError, match=expected):
        type("Bad", (Counter,), {attribute: value})


async def _async_setup(self: object, task: object, rng: object) -> str:
    return "start"


def _plain_teardown(self: object) -> None:
    pass


@tool
def _a_tool_called_reset(self: object) -> str:
    """Start again (as the method reset, it would replace the environment's own)."""
    return "again"


@pytest.mark.parametrize(
    ("base", "attributes", "expected"),
    [
        (Counter, {"setup": _async_setup}, "Bad.setup is async: subclass AsyncEnvironment"),
        (AsyncEnvironment, {"teardown": _plain_teardown}, "Bad.teardown is not async: make it 'async def'"),
        (Counter, {"setup": lambda self: "start"}, r"Bad.setup must take \(self, task, rng\)"),
        (Counter, {"tasks": lambda self, split: []}, "Bad.tasks must be a classmethod"),
        (Counter, {"reset": _a_tool_called_reset}, "replaces the environment's own 'reset'"),
    ],
)
def test_methods_that_do_not_fit_the_contract_fail_at_class_creation(
    base: type, attributes: dict[str, Any], expected: str
) -> None:
    with pytest.raises(EnvironmentDefinitionError, match=expected):
        type("Bad", (base,), {"__doc__": "Bad.", **attributes})


@pytest.mark.parametrize(
    ("grammar", "expected"), [({"incr": "by"}, "'incr' is not a tool"), ({"inc": "step"}, "has no argument 'step'")]
)
def test_a_tag_grammar_naming_what_is_not_there_fails_at_class_creation(grammar: dict[str, str], expected: str) -> None:
    with pytest.raises(EnvironmentDefinitionError, match=expected):
        type("Bad", (Counter,), {"__doc__": "Bad.", "text_actions": grammar})


def test_none_arguments_mean_no_arguments_as_over_the_wire() -> None:
    """``ToolCall(name, None)`` is the call with no arguments, ``{}``: in process as on the wire."""
    assert ToolCall("inc", None) == ToolCall("inc") == ToolCall.from_dict({"name": "inc", "arguments": None})
    env = Counter()
    env.reset(task="train/0")
    result = env.step(ToolCall("inc", None))
    assert not result.observation.is_error and result.observation.text == "1"


@pytest.mark.parametrize(
    ("adapter", "env", "said"),
    [
        (as_async, Counter, "got type <class"),
        (as_async, Counter, "pass an instance, as_async(Counter())"),
        (as_sync, Counter, "pass an instance, as_sync(Counter())"),
        (as_async, "wordle", "pass an instance, as_async(omnienv.load_environment('wordle')())"),
        (as_sync, None, "got NoneType None"),
    ],
)
def test_the_adapters_refuse_what_is_not_an_environment_naming_the_fix(
    adapter: Callable[[Any], object], env: object, said: str
) -> None:
    with pytest.raises(InvalidTypeError) as caught:
        adapter(env)
    assert isinstance(caught.value, TypeError) and said in caught.value.message


def test_a_rubric_of_what_is_not_a_function_is_refused_when_defined() -> None:
    with pytest.raises(EnvironmentDefinitionError, match="a Rubric takes reward functions, fn"):
        Rubric(finished_fast, "penalty")  # type: ignore[arg-type]
