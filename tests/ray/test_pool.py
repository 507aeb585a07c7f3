"""EnvPool on a local Ray instance: batched Wordle over four actors, and an actor killed mid-episode."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest
import ray

import tests.ray.envs as envs
from omnienv.core import EnvironmentFailure, Observation, StepResult, ToolCall, WorkerLostError
from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.ray import EnvPool, HostPool
from omnienv.ray.placement import actor_options
from tests.polling import eventually
from tests.ray.conftest import kill

pytestmark = pytest.mark.usefixtures("ray_local")
ray.cloudpickle.register_pickle_by_value(envs)  # the actors need not import the test package


def play(pool: EnvPool, envs: Sequence[int], seeds: Sequence[int]) -> dict[int, StepResult]:
    """Reset ``envs`` and play each to its end with the solver, in batches; the last result of each."""
    observations = pool.reset(seeds, envs=envs)
    assert all(isinstance(o, Observation) for o in observations), observations
    history: dict[int, list[tuple[str, str]]] = {i: [] for i in envs}
    last: dict[int, StepResult] = {}
    active = list(envs)
    for _ in range(7):
        if not active:
            break
        calls = [ToolCall("guess", {"word": next_guess(history[i])}) for i in active]
        for i, result in zip(active, pool.step(calls, envs=active), strict=True):
            assert isinstance(result, StepResult), result
            marks = read_marks(result.observation.text)
            assert marks is not None, result.observation.text
            history[i].append(marks)
            if result.done or result.truncated:
                last[i] = result
        active = [i for i in active if i not in last]
    assert not active, f"{len(active)} games did not end within 7 guesses"
    return last


def test_200_sessions_over_4_actors_play_wordle_to_the_end(wordle_hosts: HostPool) -> None:
    with EnvPool("wordle", 200, hosts=wordle_hosts) as pool:
        assert [host.sessions for host in wordle_hosts.hosts] == [50, 50, 50, 50]
        infos = ray.get([host.actor.info.remote() for host in wordle_hosts.hosts])
        assert len({info["pid"] for info in infos}) == 4  # four processes really host them
        last = play(pool, range(200), range(200))
        assert len(last) == 200
        assert all("Correct!" in r.observation.text and r.done and r.failure is None for r in last.values())
        assert all(r.reward > 0 for r in last.values())
        states = pool.state()
        assert all(s.done and s.step_count <= 6 for s in states)  # type: ignore[union-attr]
    assert wordle_hosts.sessions == 0
    infos = ray.get([host.actor.info.remote() for host in wordle_hosts.hosts])
    assert [info["sessions"] for info in infos] == [0, 0, 0, 0]  # closing the pool closed the envs


def test_per_item_errors_do_not_fail_the_batch(wordle_hosts: HostPool) -> None:
    with EnvPool("wordle", 4, hosts=wordle_hosts) as pool:
        first = pool.step([ToolCall("guess", {"word": "crane"})] * 4)
        assert all(type(r).__name__ == "NotResetError" for r in first)  # typed, per item
        pool.reset([1, 2, 3, 4])
        mixed = pool.step(
            [ToolCall("guess", {"word": "crane"}), ToolCall("nope"), None, ToolCall("guess", {"word": 5})]
        )
        assert isinstance(mixed[0], StepResult) and not mixed[0].observation.is_error
        assert isinstance(mixed[1], StepResult) and mixed[1].info["error"]["code"] == "UNKNOWN_TOOL"
        assert mixed[2] is None
        assert isinstance(mixed[3], StepResult) and mixed[3].observation.is_error
        with pytest.raises(ValueError, match="one per env"):
            pool.step([ToolCall("guess", {"word": "crane"})])
        with pytest.raises(IndexError, match="out of range"):
            pool.reset([1], envs=[9])


def test_killed_actor_fails_only_its_sessions_and_they_restart_on_live_actors(wordle_hosts: HostPool) -> None:
    with EnvPool("wordle", 40, hosts=wordle_hosts) as pool:
        pool.reset(list(range(40)))
        opening = pool.step([ToolCall("guess", {"word": "slate"})] * 40)
        assert all(isinstance(r, StepResult) for r in opening)
        victim = wordle_hosts.hosts[1]
        doomed = {i for i, slot in enumerate(pool.slots) if slot.host is victim}
        assert len(doomed) == 10
        kill(victim)

        results = pool.step([ToolCall("guess", {"word": "crane"})] * 40)
        lost = {i for i, r in enumerate(results) if isinstance(r, WorkerLostError)}
        assert lost == doomed  # only its own sessions
        assert all(isinstance(results[i], StepResult) for i in set(range(40)) - doomed)
        assert isinstance(results[min(doomed)], EnvironmentFailure)  # a failure flag: mask, never score
        assert "died" in str(results[min(doomed)]) and "reset()" in str(results[min(doomed)])
        assert not victim.alive
        again = pool.step([ToolCall("guess", {"word": "crane"}) if i in doomed else None for i in range(40)])
        assert all(isinstance(again[i], WorkerLostError) for i in doomed)

        # the dead actor is replaced: capacity comes back, and the lost sessions restart there
        eventually(lambda: len(wordle_hosts.live) == 4, 20)
        assert wordle_hosts.replaced == 1 and victim not in wordle_hosts.live
        last = play(pool, range(40), range(100, 140))  # reset moves the lost sessions to live actors
        assert len(last) == 40 and all(r.done for r in last.values())
        assert victim.sessions == 0
        assert all(slot.host.alive for slot in pool.slots)
        assert sorted(h.sessions for h in wordle_hosts.live) == [10, 10, 10, 10]
        assert {slot.host.index for i, slot in enumerate(pool.slots) if i in doomed} == {4}


def test_async_batches_and_an_actor_lost_before_the_call(wordle_hosts: HostPool) -> None:
    async def scenario() -> None:
        pool = EnvPool("wordle", 8, hosts=wordle_hosts)
        try:
            observations = await pool.areset(list(range(8)))
            assert all(isinstance(o, Observation) for o in observations)
            kill(wordle_hosts.hosts[0])
            results = await pool.astep([ToolCall("guess", {"word": "crane"})] * 8)
            lost = [i for i, r in enumerate(results) if isinstance(r, WorkerLostError)]
            assert lost == [i for i, s in enumerate(pool.slots) if s.host.index == 0] and len(lost) == 2
            states = await pool.astate()
            assert [i for i, s in enumerate(states) if isinstance(s, WorkerLostError)] == lost
            assert all(isinstance(o, Observation) for o in await pool.areset(list(range(8))))
        finally:
            pool.close()

    asyncio.run(scenario())


def test_every_actor_dead_is_a_typed_error(ray_local: None) -> None:
    hosts = HostPool("wordle", 1, options={"num_cpus": 0.5}, replace=False)
    with hosts, EnvPool("wordle", 2, hosts=hosts) as pool:
        kill(hosts.hosts[0])
        assert all(isinstance(r, WorkerLostError) for r in pool.state())
        results = pool.reset([1, 2])
        assert all(isinstance(r, WorkerLostError) and "every Ray actor" in str(r) for r in results)
        assert hosts.replaced == 0 and not hosts.starting


def test_a_reset_waits_for_the_replacement_of_the_only_actor(ray_local: None) -> None:
    with HostPool("wordle", 1, options={"num_cpus": 0.5}) as hosts, EnvPool("wordle", 2, hosts=hosts) as pool:
        first = hosts.hosts[0]
        assert first.node_id and first.node_ip == "127.0.0.1" and first.pid  # where it runs
        pool.reset([1, 2])
        kill(first)
        assert all(isinstance(r, WorkerLostError) for r in pool.step([ToolCall("guess", {"word": "crane"})] * 2))
        assert hosts.replaced == 1
        observations = pool.reset([3, 4])  # no live actor yet, one starting: the reset waits for it
        assert all(isinstance(o, Observation) for o in observations), observations
        replacement = hosts.live[0]
        assert replacement is not first and replacement.index == 1 and replacement.pid != first.pid
        assert all(slot.host is replacement for slot in pool.slots)
        assert all(isinstance(r, StepResult) for r in pool.step([ToolCall("guess", {"word": "crane"})] * 2))


def test_replacements_that_die_while_starting_stop_after_three_in_a_row(ray_local: None) -> None:
    """docs/ray.md: an actor that cannot start at all is not restarted forever."""
    with HostPool("wordle", 1, options={"num_cpus": 0.5}) as hosts, EnvPool("wordle", 1, hosts=hosts) as pool:
        pool.reset([1])
        wordle, hosts.env_class = hosts.env_class, envs.TrackedBlocking  # Wordle's actor class refuses it
        try:
            kill(hosts.hosts[0])
            assert isinstance(pool.step([ToolCall("guess", {"word": "crane"})])[0], WorkerLostError)
            for _ in range(5):  # each reset waits for the replacement starting, which dies; the next one starts
                assert isinstance(pool.reset([2])[0], WorkerLostError)
            assert hosts.replaced == 3 and not hosts.starting and not hosts.live
            assert isinstance(pool.reset([3])[0], WorkerLostError) and hosts.replaced == 3  # no fourth
        finally:
            hosts.env_class = wordle


@pytest.mark.parametrize("env_class", [envs.Tracked, envs.TrackedBlocking], ids=["inline host", "async host"])
def test_a_pool_shut_down_closes_the_environments_its_actors_still_hold(
    env_class: type[envs.Tracked], tmp_path: Path
) -> None:
    """``ray.kill`` would end the actors at once: what their environments started (kernels,
    sandboxes) would outlive them. Shutting down, each actor closes what it holds, then exits."""
    marks = [tmp_path / f"env{i}" for i in range(3)]
    with HostPool(env_class, 1, options={"num_cpus": 0.5}) as hosts:
        pool = EnvPool(env_class, 3, hosts=hosts)  # never closed: its environments are still open
        assert all(isinstance(o, Observation) for o in pool.reset([1, 2, 3]))
        tracked = pool.step([ToolCall("track", {"path": str(mark)}) for mark in marks])
        assert all(isinstance(r, StepResult) and r.observation.text == "tracking" for r in tracked), tracked
        assert not any(mark.exists() for mark in marks)
        actor = hosts.hosts[0]
    assert [mark.read_text() for mark in marks] == ["closed"] * 3  # closed before shutdown returned
    assert not actor.alive and actor.death == "the pool was shut down"
    with pytest.raises(ray.exceptions.RayActorError):  # and the actor exited
        ray.get(actor.actor.info.remote(), timeout=30)


def test_actors_the_cluster_cannot_place_are_a_clear_error(ray_local: None) -> None:
    with pytest.raises(TimeoutError, match=r"lacks the resources .* lower --ray-actors or .*--ray-cpus"):
        HostPool("wordle", 1, options={"num_cpus": 64}, ready_timeout=2)
    with pytest.raises(ValueError, match="num_envs"):
        EnvPool("wordle", 0, hosts=None)


def test_resource_requests_come_from_the_env_class_and_the_caller_wins() -> None:
    from omnienv.envs.wordle import Wordle

    class Heavy(Wordle):
        name = "heavy_wordle"
        ray_options: ClassVar[dict[str, object]] = {"num_cpus": 2, "memory": 1 << 30}

    assert actor_options(Wordle)["num_cpus"] == 1
    assert actor_options(envs.SlowWork)["max_concurrency"] == 10_000  # an async host: calls overlap
    assert actor_options(Heavy) == {
        "num_cpus": 2,
        "memory": 1 << 30,
        "max_concurrency": 1,  # an inline host: its calls never wait, one at a time
        "scheduling_strategy": "SPREAD",  # over the nodes: a lost node costs only its share
        "enable_task_events": False,
    }
    assert actor_options(Heavy, {"num_cpus": 0.5, "scheduling_strategy": "DEFAULT"})["scheduling_strategy"] == "DEFAULT"
