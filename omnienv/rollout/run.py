"""``rollout()``: many episodes of one environment with one policy, written as JSON lines."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import orjson

from omnienv.core import AsyncEnv, EnvironmentBase, TaskError, as_async
from omnienv.rollout.loop import EnvFactory, EpisodePlan, arun_episodes
from omnienv.rollout.policy import Policy
from omnienv.rollout.summary import Summary, summarize
from omnienv.rollout.trajectory import Episode

__all__ = ["plan_episodes", "rollout"]


def plan_episodes(
    env_class: type[EnvironmentBase], episodes: int, split: str | None, seed: int = 0
) -> list[EpisodePlan]:
    """Episode ``i`` plays task ``i`` of the split (cycling) with seed ``seed + i``: reproducible."""
    if split is None:
        return [EpisodePlan(i, None, seed + i) for i in range(episodes)]
    tasks = env_class._split_tasks(split)
    if not tasks:
        raise TaskError(f"split '{split}' of {env_class.name} has no tasks")
    return [EpisodePlan(i, tasks[i % len(tasks)].id, seed + i) for i in range(episodes)]


def rollout(
    env_class: type[EnvironmentBase],
    make_policy: Callable[[], Policy],
    plans: list[EpisodePlan],
    *,
    out: Path | None = None,
    concurrency: int = 1,
    deadline_s: float | None = None,
    make_env: EnvFactory | None = None,
    on_episode: Callable[[Episode], None] | None = None,
) -> Summary:
    """Run ``plans`` in-process (or on ``make_env``'s remote sessions) and summarise them."""

    def local_env() -> AsyncEnv:
        return as_async(env_class())

    async def main() -> list[Episode]:
        done: list[Episode] = []
        sink = out.open("wb") if out else None
        try:
            async for episode in arun_episodes(
                make_env or local_env, make_policy, plans, concurrency=concurrency, deadline_s=deadline_s
            ):
                done.append(episode)
                if sink:
                    sink.write(orjson.dumps(episode.to_dict(), option=orjson.OPT_APPEND_NEWLINE))
                    sink.flush()
                if on_episode:
                    on_episode(episode)
        finally:
            if sink:
                sink.close()
        return done

    return summarize(asyncio.run(main()))
