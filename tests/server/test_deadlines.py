"""StepDeadlines: one timer bounds every step; what it cuts, what it leaves alone."""

from __future__ import annotations

import asyncio
import time

import pytest

from omnienv.server.deadlines import DeadlineExpired, StepDeadlines

SECONDS = 0.3


def run(coroutine: object) -> object:
    return asyncio.run(asyncio.wait_for(coroutine, 30))  # type: ignore[arg-type]


async def sleep_then(seconds: float, value: object = "done") -> object:
    await asyncio.sleep(seconds)
    return value


def test_a_call_past_its_deadline_is_cut_at_most_a_tick_late() -> None:
    deadlines = StepDeadlines(SECONDS)

    async def main() -> float:
        start = time.monotonic()
        with pytest.raises(DeadlineExpired):
            await deadlines.run(sleep_then(60))
        return time.monotonic() - start

    elapsed = run(main())
    assert SECONDS <= elapsed < SECONDS + deadlines.tick + 2.0  # type: ignore[operator]
    assert not deadlines._due and not deadlines._expired


def test_only_the_calls_that_overrun_are_cut() -> None:
    deadlines = StepDeadlines(2.0)  # far beyond the quick calls, even on a loaded machine

    async def main() -> list[object]:
        calls = [deadlines.run(sleep_then(0.01 * i, i)) for i in range(8)]
        calls += [deadlines.run(sleep_then(60)) for _ in range(3)]
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = run(main())
    assert outcomes[:8] == list(range(8))  # type: ignore[index]
    assert all(isinstance(o, DeadlineExpired) for o in outcomes[8:])  # type: ignore[index]


def test_the_calls_own_timeout_and_a_cancellation_from_elsewhere_pass_through() -> None:
    deadlines = StepDeadlines(SECONDS)

    async def own_timeout() -> None:
        raise TimeoutError("the environment's own")

    async def main() -> None:
        with pytest.raises(TimeoutError, match="own"):
            await deadlines.run(own_timeout())
        task = asyncio.ensure_future(deadlines.run(sleep_then(60)))
        await asyncio.sleep(0.01)
        task.cancel()  # a client that left
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert not deadlines._due


def test_a_call_that_swallows_the_cut_returns_and_leaves_no_cancellation_behind() -> None:
    deadlines = StepDeadlines(SECONDS)

    async def stubborn() -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return "finished anyway"
        return "never"

    async def main() -> tuple[object, int]:
        value = await deadlines.run(stubborn())
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0)  # a cancellation left pending would be raised here
        return value, task.cancelling()

    assert run(main()) == ("finished anyway", 0)


def test_a_bounded_call_inside_another_and_a_second_event_loop() -> None:
    deadlines = StepDeadlines(SECONDS)

    async def nested() -> object:
        return await deadlines.run(sleep_then(60))

    for _ in range(2):  # the second asyncio.run gets a fresh loop: its timer must be armed again
        with pytest.raises(DeadlineExpired):
            run(deadlines.run(nested()))
        assert run(deadlines.run(sleep_then(0, "fine"))) == "fine"


def test_a_deadline_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        StepDeadlines(0)
