"""``omnienv rollout``: many episodes with a built-in policy, a progress bar and a summary."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from omnienv.cli.common import console, env_class, fail
from omnienv.core import OmniEnvError
from omnienv.rollout import Summary, make_policy, plan_episodes
from omnienv.rollout import rollout as run_rollout


def rollout(
    env: Annotated[str, typer.Argument(help="Environment name, e.g. wordle")],
    policy: Annotated[str, typer.Option(help="Built-in policy: random, or the env's scripted one")] = "random",
    episodes: Annotated[int, typer.Option(min=1, help="How many episodes")] = 10,
    split: Annotated[str | None, typer.Option(help="Task split to cycle through, e.g. test")] = None,
    out: Annotated[Path | None, typer.Option(help="Write one JSON line per episode here")] = None,
    seed: Annotated[int, typer.Option(help="Episode i uses seed+i")] = 0,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes played at once")] = 4,
    deadline: Annotated[float | None, typer.Option(help="Seconds before an episode is failed")] = None,
    url: Annotated[str | None, typer.Option(help="Play on a remote omnienv server instead")] = None,
) -> None:
    """Roll out a policy on an environment and summarise the results."""
    cls = env_class(env)
    try:
        make = make_policy(policy, cls, seed)
        plans = plan_episodes(cls, episodes, split, seed)
    except (ValueError, OmniEnvError) as exc:
        raise fail(str(exc)) from None
    make_env = _remote(url) if url else None
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task(f"{cls.name} x {policy}", total=len(plans))
        summary = run_rollout(
            cls, make, plans, out=out, concurrency=concurrency, deadline_s=deadline,
            make_env=make_env, on_episode=lambda _: progress.advance(bar),
        )
    show_summary(summary, title=f"{cls.name}, policy {policy}" + (f", split {split}" if split else ""))
    if out:
        console.print(f"trajectories: {out}")


def _remote(url: str):  # type: ignore[no-untyped-def]
    try:
        from omnienv.client import connect
    except ImportError as exc:
        raise fail(f"remote rollouts need the server extra: pip install 'omnienv[server]' ({exc})") from None
    return lambda: connect(url)


def show_summary(summary: Summary, title: str) -> None:
    def num(value: float | None, fmt: str = ".4f") -> str:
        return "-" if value is None or math.isnan(value) else format(value, fmt)

    table = Table("metric", "value", title=title)
    table.add_row("episodes", str(summary.episodes))
    table.add_row("mean reward", f"{num(summary.mean_reward)} ± {num(summary.reward_ci95)}")
    table.add_row("win rate", num(summary.success_rate, ".1%"))
    table.add_row("mean turns", num(summary.mean_turns, ".2f"))
    table.add_row("truncated", str(summary.truncated))
    table.add_row("failures (not scored)", str(summary.failures))
    console.print(table)
