"""The episode loop: an environment, a policy, and a record of everything that happened.

It drives the async face of an environment (:func:`omnienv.core.as_async` in-process, or a
client of a remote server), so one loop serves both. Anything that breaks outside the agent's
control (the environment raising, the connection dropping, the policy crashing, the deadline)
ends the episode with a ``failure`` instead of a score. A policy that stops acting first (a model
answering in words) leaves the episode to :func:`end_stopped`, which scores it as it stands.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from omnienv.core import AsyncEnv, Failure, OmniEnvError, ToolCall
from omnienv.rollout._arguments import check_arguments, require_policy_factory
from omnienv.rollout.policy import EndEpisode, Policy
from omnienv.rollout.trajectory import TRAINER_END, Episode, Step

__all__ = ["EpisodePlan", "arun_episode", "arun_episodes", "end_stopped", "require_policy_factory"]

EnvFactory = Callable[[], AsyncEnv | Awaitable[AsyncEnv]]


@dataclass(frozen=True, slots=True)
class EpisodePlan:
    index: int
    task_id: str | None
    seed: int | None


async def arun_episode(env: AsyncEnv, policy: Policy, plan: EpisodePlan, *, deadline_s: float | None = None) -> Episode:
    """Play one episode to its end (or failure) and return its record."""
    episode = Episode(env.name, plan.index, plan.task_id, plan.seed, policy.name)
    started = time.perf_counter()
    deadline = asyncio.timeout(deadline_s)
    try:
        async with deadline:
            await _play(env, policy, plan, episode)
    except TimeoutError as exc:
        if deadline.expired():
            episode.failure = Failure("timeout", f"episode exceeded its {deadline_s:g} s deadline")
        else:  # the environment's own wait gave up (a connection of its own), not the episode's deadline
            episode.failure = Failure("transport", f"{type(exc).__name__}: {exc}")
    except _PolicyFailed as exc:
        episode.failure = Failure(exc.kind, str(exc))
    except (OmniEnvError, OSError) as exc:
        episode.failure = Failure(getattr(exc, "code", "transport").lower(), f"{type(exc).__name__}: {exc}")
    episode.seconds = time.perf_counter() - started
    return episode


class _PolicyFailed(Exception):
    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


async def _play(env: AsyncEnv, policy: Policy, plan: EpisodePlan, episode: Episode) -> None:
    episode.prompt = await env.reset(task=plan.task_id, seed=plan.seed)
    while True:
        try:
            call: ToolCall = await policy.act(episode)
        except EndEpisode as exc:
            episode.stopped = str(exc) or "the policy stopped"
            return await end_stopped(env, episode)
        except Exception as exc:
            kind = getattr(exc, "failure_kind", "policy")
            raise _PolicyFailed(f"{type(exc).__name__}: {exc}", kind) from exc
        started = time.perf_counter()
        result = await env.step(call)
        episode.steps.append(Step(call, result, time.perf_counter() - started))
        if result.over:
            episode.failure = result.failure or episode.failure
            return


async def end_stopped(env: AsyncEnv, episode: Episode) -> None:
    """End the episode its policy (or harness) left running, as every trainer does: the rubric scores
    the state reached (for the terminal, its verifier grades the workspace), so a model that stops
    one call short of ``submit`` is scored alike in an eval and in training. Recorded as a last
    step named :data:`TRAINER_END`; an error of the environment's reaches the caller."""
    started = time.perf_counter()
    result = await env.end()
    episode.steps.append(Step(ToolCall(TRAINER_END), result, time.perf_counter() - started))


async def arun_episodes(
    make_env: EnvFactory,
    make_policy: Callable[[], Policy],
    plans: Sequence[EpisodePlan],
    *,
    concurrency: int = 1,
    deadline_s: float | None = None,
) -> AsyncIterator[Episode]:
    """Run ``plans`` with up to ``concurrency`` episodes at once; yield each as it finishes.

    Each worker owns one environment and one policy for all its episodes, as trainers pool them.
    """
    check_arguments(
        "arun_episodes",
        make_env=make_env,
        make_policy=make_policy,
        plans=plans,
        concurrency=concurrency,
        deadline_s=deadline_s,
    )
    queue: asyncio.Queue[EpisodePlan] = asyncio.Queue()
    for plan in plans:
        queue.put_nowait(plan)
    finished: asyncio.Queue[Episode | BaseException] = asyncio.Queue()

    async def worker() -> None:
        made = make_env()
        env = await made if isinstance(made, Awaitable) else made
        policy = make_policy()
        try:
            while not queue.empty():
                plan = queue.get_nowait()
                await finished.put(await arun_episode(env, policy, plan, deadline_s=deadline_s))
        finally:
            await env.close()

    async def guarded() -> None:
        try:
            await worker()
        except BaseException as exc:  # surfaces in the consumer instead of vanishing in a task
            await finished.put(exc)
            raise

    workers = [asyncio.create_task(guarded()) for _ in range(min(concurrency, len(plans)))]
    completed = False
    try:
        for _ in range(len(plans)):
            item = await finished.get()
            if isinstance(item, BaseException):
                raise item
            yield item
        completed = True
    finally:
        if not completed:  # stopped early: the remaining episodes are abandoned
            for task in workers:
                task.cancel()
        # let every worker close its environment (remote sessions included) before returning
        await asyncio.gather(*workers, return_exceptions=True)
