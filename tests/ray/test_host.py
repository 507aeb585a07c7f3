"""The host actor's class in-process: it imports nothing from Ray, so its replies are tested here.

On a cluster its methods run in a Ray worker; what it answers (a ``Reply`` per call, an error
as the typed exception it is) is the same, and is what these tests pin.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import random
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from omnienv.core import (
    EnvironmentFailure,
    NotResetError,
    Observation,
    State,
    StepResult,
    Task,
    TaskError,
    ToolCall,
)
from omnienv.core.env import Environment
from omnienv.core.tools import tool
from omnienv.envs.wordle import Wordle
from omnienv.ray.host import EnvHost, InlineEnvHost, _run_now, encode, host_class, is_inline, unwrap

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coroutine, 30))


class Threads(Environment):
    """A blocking environment: the host builds and steps it on its own thread pool."""

    name = "threads"
    built_on = ""

    def __init__(self) -> None:
        super().__init__()
        self.built_on = threading.current_thread().name

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "ready"

    @tool
    def where(self) -> str:
        """Name the threads the environment was built on and the tool runs on."""
        return f"{self.built_on} {threading.current_thread().name}"


class Unbuildable(Environment):
    name = "unbuildable"
    blocking = False

    def __init__(self) -> None:
        raise OSError("no display")


class BadTeardown(Environment):
    name = "bad_teardown"
    blocking = False

    @tool
    def noop(self) -> str:
        """Do nothing."""
        return ""

    def teardown(self) -> None:
        raise RuntimeError("the simulator would not stop")


def test_a_session_plays_through_its_replies() -> None:
    host = EnvHost("wordle")
    assert host.executor is None  # Wordle does not block: it runs on the actor's loop

    async def play() -> None:
        observation, state = unwrap(await host.start("a", None, 7))
        assert isinstance(observation, Observation) and isinstance(state, State)
        assert state.step_count == 0 and state.episode_id
        result = unwrap(await host.step("a", ToolCall("guess", {"word": "crane"})))
        assert isinstance(result, StepResult) and not result.done
        assert unwrap(await host.state("a")).step_count == 1
        ended = unwrap(await host.end("a"))
        assert ended.truncated and ended.over
        assert await host.info() == {"pid": os.getpid(), "sessions": 1, "env": "wordle"}
        assert await host.close("a") == (True, None)
        assert await host.close("a") == (True, None)  # closing twice is fine
        assert (await host.info())["sessions"] == 0

    run(play())


def test_errors_come_back_as_the_typed_exceptions_they_are() -> None:
    host = EnvHost("wordle")

    async def misuse() -> None:
        ok, error = await host.step("nobody", ToolCall("guess", {"word": "crane"}))
        assert not ok and isinstance(error, NotResetError) and "'nobody'" in error.message
        with pytest.raises(NotResetError):
            unwrap(await host.state("nobody"))
        with pytest.raises(NotResetError):
            unwrap(await host.end("nobody"))
        with pytest.raises(TaskError, match="no task 'no-such-task'"):  # the environment's own error
            unwrap(await host.reset("a", "no-such-task"))
        assert "a" in host.envs  # the environment was made; only its reset failed
        with pytest.raises(TaskError):
            unwrap(await host.start("b", "no-such-task"))

    run(misuse())


def test_the_batch_call_answers_per_item() -> None:
    host = EnvHost("wordle")

    async def batch() -> list[tuple[bool, Any]]:
        await host.call_many([("reset", "a", (None, 1)), ("reset", "b", (None, 2))])
        return await host.call_many(
            [
                ("step", "a", (ToolCall("guess", {"word": "crane"}),)),
                ("step", "ghost", (ToolCall("guess", {"word": "crane"}),)),
                ("state", "b", ()),
                ("format_disk", "a", ()),  # not a session method: refused, never looked up
            ]
        )

    stepped, lost, state, refused = run(batch())
    assert stepped[0] and isinstance(stepped[1], StepResult)
    assert not lost[0] and isinstance(lost[1], NotResetError)
    assert state[0] and state[1].step_count == 0
    assert not refused[0] and isinstance(refused[1], EnvironmentFailure)
    assert "no session method 'format_disk'" in refused[1].message


def test_the_batch_keeps_the_order_of_its_items_and_travels_pickled() -> None:
    host = EnvHost("wordle")

    async def many() -> None:
        resets = await host.call_many([("reset", key, (None, seed)) for key, seed in (("a", 1), ("b", 2), ("c", 3))])
        assert all(ok for ok, _ in resets)
        steps = await host.call_many(
            [("step", "c", (ToolCall("get_history", {}),)), ("step", "a", (ToolCall("get_history", {}),))]
        )
        assert all(ok and isinstance(result, StepResult) for ok, result in steps)
        blob = await host.call_blob(encode([("state", key, ()) for key in ("b", "a", "c")]))
        assert [state.step_count for _, state in pickle.loads(blob)] == [0, 1, 1]
        closed = await host.call_many([("close", key, ()) for key in "abcd"])
        assert closed == [(True, None)] * 4 and host.envs == {}

    run(many())


def test_an_inline_environment_is_hosted_without_an_event_loop() -> None:
    assert host_class(Wordle) is InlineEnvHost and host_class(Threads) is EnvHost
    host = InlineEnvHost("wordle")  # what a plain Ray actor runs: no loop anywhere
    replies = pickle.loads(host.call_blob(encode([("start", "a", (None, 7)), ("step", "a", (ToolCall("nope"),))])))
    (ok, (observation, state)), (stepped, result) = replies
    assert ok and isinstance(observation, Observation) and state.step_count == 0
    assert stepped and result.info["error"]["code"] == "UNKNOWN_TOOL"  # the env's own answer
    assert host.info() == {"pid": os.getpid(), "sessions": 1, "env": "wordle"}
    with pytest.raises(TypeError, match="can block"):
        InlineEnvHost(Threads)


def test_batches_pickle_plainly_unless_something_must_travel_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain data and omnienv's types take the fast pickler; a local class (which pickle cannot
    name) and anything of ``__main__`` go by value through cloudpickle, as Ray would send them."""
    from ray import cloudpickle

    plain = [("step", "a", (ToolCall("guess", {"word": "crane"}),)), (True, Observation.of("hi"))]
    assert encode(plain) == pickle.dumps(plain, protocol=5)

    class Local:
        def __eq__(self, other: object) -> bool:
            return type(other).__name__ == "Local"

    assert pickle.loads(encode([("step", "a", (Local(),))])) == [("step", "a", (Local(),))]

    main_class = type("InMain", (), {"__module__": "__main__", "__qualname__": "InMain"})
    monkeypatch.setattr(sys.modules["__main__"], "InMain", main_class, raising=False)
    assert b"__main__" in pickle.dumps(main_class)  # pickle would send a name the actor cannot look up
    blob = encode([main_class])
    assert blob == bytes(cloudpickle.dumps([main_class], protocol=5))
    monkeypatch.delattr(sys.modules["__main__"], "InMain")
    assert pickle.loads(blob)[0].__name__ == "InMain"  # rebuilt from the bytes, not looked up


def test_an_inline_call_that_suspends_is_refused() -> None:
    async def suspends() -> None:  # what an environment wrongly marked non-blocking could do
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="should say blocking = True"):
        _run_now(suspends())
    assert is_inline(Wordle) and not is_inline(Threads)


def test_a_blocking_environment_runs_on_the_hosts_own_threads() -> None:
    host = EnvHost(Threads, threads=2)
    assert host.blocking and host.executor is not None
    try:

        async def play() -> str:
            unwrap(await host.reset("a"))
            return unwrap(await host.step("a", ToolCall("where", {}))).observation.text

        built_on, runs_on = run(play()).split()
        assert built_on.startswith("omnienv-host") and runs_on.startswith("omnienv-host")
    finally:
        host.executor.shutdown(wait=True)


def test_an_environment_that_cannot_be_built_is_an_infrastructure_failure() -> None:
    host = EnvHost(Unbuildable)
    ok, error = run(host.reset("a"))
    assert not ok and isinstance(error, EnvironmentFailure)
    assert "could not create a Unbuildable on its worker: OSError: no display" in error.message
    assert host.envs == {}


def test_a_failing_close_is_reported_not_raised() -> None:
    host = EnvHost(BadTeardown)
    run(host.open("a"))
    assert run(host.open("a")) == (True, None)  # opening again keeps the environment
    ok, error = run(host.close("a"))
    assert not ok and isinstance(error, EnvironmentFailure)
    assert error.message == "the environment host failed: RuntimeError: the simulator would not stop"
    assert "a" not in host.envs
