"""``rollout()``: many episodes of one environment with one policy, written as JSON lines.

With ``resume=True`` a run picks up where an interrupted one stopped: episodes already in the
output file are kept and not played again (a half-written last line is dropped), and the
summary covers both. With ``retry_failures`` too, the episodes flagged as failures (an outage of
the model's API, a crashed environment) are taken out of the file and played again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import orjson

from omnienv.core import AsyncEnv, EnvironmentBase, TaskError, UsageError, as_async
from omnienv.rollout._arguments import check_arguments
from omnienv.rollout.loop import EnvFactory, EpisodePlan, arun_episodes
from omnienv.rollout.policy import Policy
from omnienv.rollout.summary import Summary, summarize
from omnienv.rollout.trajectory import Episode

__all__ = ["kept_on_resume", "plan_episodes", "read_episodes", "rollout", "summary_path"]


def plan_episodes(
    env_class: type[EnvironmentBase], episodes: int, split: str | None, seed: int = 0
) -> list[EpisodePlan]:
    """Episode ``i`` plays task ``i`` of the split (cycling) with seed ``seed + i``: reproducible."""
    check_arguments("plan_episodes", env_class=env_class, episodes=episodes, split=split, seed=seed)
    if split is None:
        return [EpisodePlan(i, None, seed + i) for i in range(episodes)]
    tasks = env_class.task_index().split(split)
    if not tasks:
        raise TaskError(f"split '{split}' of {env_class.name} has no tasks")
    return [EpisodePlan(i, tasks[i % len(tasks)].id, seed + i) for i in range(episodes)]


def summary_path(out: Path) -> Path:
    return out.with_name(out.name.removesuffix(".jsonl") + ".summary.json")


def read_episodes(path: Path, *, repair: bool = False) -> list[Episode]:
    """Episodes from a JSONL file; with ``repair`` a torn last line is cut off the file."""
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    episodes, good_end = [], 0
    for number, line in enumerate(lines, 1):
        try:
            if not line.endswith(b"\n"):
                raise ValueError("unterminated line")
            episodes.append(Episode.from_dict(orjson.loads(line)))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            if number == len(lines):  # the line being written when the run was killed
                break
            raise UsageError(f"{path}: line {number} is not an episode record") from None
        good_end += len(line)
    if repair and good_end < len(data):
        with path.open("r+b") as handle:
            handle.truncate(good_end)
    return episodes


def kept_on_resume(previous: list[Episode], retry_failures: bool) -> list[Episode]:
    """The episodes of an interrupted run that a resume keeps: all of them, or with
    ``retry_failures`` those not flagged as failures (the others are played again)."""
    return [episode for episode in previous if not (retry_failures and episode.failure is not None)]


def _drop_lines(path: Path, kept: list[Episode]) -> None:
    """Rewrite ``path`` with the lines of ``kept`` only, as they were written (atomically)."""
    wanted = {episode.index for episode in kept}
    lines = path.read_bytes().splitlines(keepends=True)
    scratch = path.with_name(path.name + ".partial")
    scratch.write_bytes(b"".join(line for line in lines if orjson.loads(line).get("index") in wanted))
    scratch.replace(path)


def _check_same_plan(out: Path, previous: list[Episode], plans: list[EpisodePlan]) -> None:
    """Refuse to resume a file written by another plan: episodes are matched by index, and a
    resume with another ``--seed`` or ``--split`` would mix two runs' episodes in one summary."""
    planned = {plan.index: plan for plan in plans}
    for episode in previous:
        plan = planned.get(episode.index)
        if plan is None:
            continue
        if episode.seed != plan.seed or (plan.task_id is not None and episode.task_id != plan.task_id):
            raise UsageError(
                f"{out} was written by another plan: its episode {episode.index} played task {episode.task_id!r} "
                f"with seed {episode.seed}, where this run plans {plan.task_id!r} with seed {plan.seed}. Resume "
                "with the first run's --split and --seed, or write to a new --out"
            )


def rollout(
    env_class: type[EnvironmentBase],
    make_policy: Callable[[], Policy],
    plans: list[EpisodePlan],
    *,
    out: Path | None = None,
    resume: bool = False,
    retry_failures: bool = False,
    concurrency: int = 1,
    deadline_s: float | None = None,
    make_env: EnvFactory | None = None,
    on_episode: Callable[[Episode], None] | None = None,
    annotate: Callable[[Episode], None] | None = None,
) -> Summary:
    """Run ``plans`` in-process (or on ``make_env``'s remote sessions) and summarise them
    (``resume`` and ``retry_failures``: see the module docs).

    ``annotate`` sees each new episode before its line is written, so what a caller kept beside the
    run (the captured model calls) lands in the same line and survives a resume with it."""

    def local_env() -> AsyncEnv:
        return as_async(env_class())

    check_arguments(  # before ``out`` is opened (and emptied, not resuming)
        "rollout",
        env_class=env_class,
        make_policy=make_policy,
        plans=plans,
        concurrency=concurrency,
        deadline_s=deadline_s,
        make_env=make_env or local_env,
        out=out,
    )
    out = None if out is None else Path(out)
    previous: list[Episode] = []
    if resume and out is not None and out.exists():
        previous = read_episodes(out, repair=True)
        strangers = {e.env for e in previous} - {env_class.name}
        if strangers:
            raise UsageError(f"{out} holds episodes of {', '.join(sorted(strangers))}, not {env_class.name}")
        _check_same_plan(out, previous, plans)
        kept = kept_on_resume(previous, retry_failures)
        if len(kept) < len(previous):
            _drop_lines(out, kept)
            previous = kept
        finished = {e.index for e in previous}
        plans = [plan for plan in plans if plan.index not in finished]

    async def main() -> list[Episode]:
        done: list[Episode] = []
        sink = out.open("ab" if resume else "wb") if out else None
        try:
            async for episode in arun_episodes(
                make_env or local_env, make_policy, plans, concurrency=concurrency, deadline_s=deadline_s
            ):
                done.append(episode)
                if annotate:
                    annotate(episode)
                if sink:
                    sink.write(episode.to_line())
                    sink.flush()
                if on_episode:
                    on_episode(episode)
        finally:
            if sink:
                sink.close()
        return done

    summary = summarize(previous + (asyncio.run(main()) if plans else []))
    if out is not None:
        summary_path(out).write_bytes(orjson.dumps(summary.to_dict(), option=orjson.OPT_INDENT_2))
    return summary
