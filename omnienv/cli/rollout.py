"""``omnienv rollout``: many episodes with a built-in policy, a progress bar and a summary."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from omnienv.cli.common import console, env_class, errors, fail
from omnienv.core import AsyncEnv, CapacityError, EnvironmentBase, Failure, OmniEnvError
from omnienv.rollout import EpisodePlan, Policy, Summary, make_policy, plan_episodes
from omnienv.rollout import rollout as run_rollout
from omnienv.rollout.loop import EnvFactory
from omnienv.rollout.trajectory import Episode


def rollout(
    env: Annotated[str, typer.Argument(help="Environment name, e.g. wordle")],
    policy: Annotated[
        str,
        typer.Option(help="random, one of the env's scripted policies (oracle, solver...), or package.module:Class"),
    ] = "random",
    episodes: Annotated[int, typer.Option(min=1, help="How many episodes")] = 10,
    split: Annotated[str | None, typer.Option(help="Task split to cycle through, e.g. test")] = None,
    out: Annotated[Path | None, typer.Option(help="Write one JSON line per episode here")] = None,
    seed: Annotated[int, typer.Option(help="Episode i uses seed+i")] = 0,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes played at once")] = 4,
    deadline: Annotated[float | None, typer.Option(min=0.001, help="Seconds before an episode is failed")] = None,
    url: Annotated[str | None, typer.Option(help="Play on a remote omnienv server instead")] = None,
) -> None:
    """Roll out a policy on an environment and summarise the results."""
    play_episodes(env, policy, episodes, split, out, seed, concurrency, deadline, url)


def play_episodes(
    env: str,
    policy: str,
    episodes: int,
    split: str | None,
    out: Path | None,
    seed: int,
    concurrency: int,
    deadline: float | None,
    url: str | None,
) -> None:
    cls = env_class(env)
    try:
        make = make_policy(policy, cls, seed)
        plans = plan_episodes(cls, episodes, split, seed)
    except (ValueError, OmniEnvError) as exc:
        raise fail(str(exc)) from None
    summary, first_failure = run_with_progress(
        cls,
        make,
        plans,
        f"{cls.name} x {policy}",
        out=out,
        concurrency=concurrency,
        deadline_s=deadline,
        make_env=remote_env(url) if url else None,
    )
    show_summary(summary, title=f"{cls.name}, policy {policy}" + (f", split {split}" if split else ""))
    if out:
        console.print(f"trajectories: {out}")
    exit_if_nothing_scored(summary, first_failure)


def run_with_progress(
    cls: type[EnvironmentBase], make: Callable[[], Policy], plans: list[EpisodePlan], label: str, **options: Any
) -> tuple[Summary, Failure | None]:
    """:func:`omnienv.rollout.rollout` with a progress bar; errors become clean exits. Also returns
    the first failure of the episodes played, for :func:`exit_if_nothing_scored`."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    failures: list[Failure] = []

    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(label, total=len(plans))

        def played(episode: Episode) -> None:
            progress.advance(bar)
            if episode.failure is not None and not failures:
                failures.append(episode.failure)

        try:
            summary = run_rollout(cls, make, plans, on_episode=played, **options)
        except OmniEnvError as exc:
            raise fail(exc.message) from None
        progress.update(bar, completed=len(plans))
    return summary, (failures[0] if failures else None)


def exit_if_nothing_scored(summary: Summary, first_failure: Failure | None) -> None:
    """A run none of whose episodes could be scored (the model unreachable, the server gone) is a
    failed command: exit 1, with the first reason on the console (else it is only in the JSONL)."""
    if not summary.episodes or summary.scored:
        return
    reason = f" (the first: {first_failure.kind}: {first_failure.message})" if first_failure is not None else ""
    errors.print(f"[bold red]error:[/] every episode failed, none is scored{escape(reason)}", soft_wrap=True)
    raise typer.Exit(1)


def remote_env(url: str) -> EnvFactory:
    """Sessions on a remote omnienv server, one per episode played at once."""
    try:
        from omnienv.client import connect
    except ImportError as exc:
        raise fail(f"remote environments need the server extra: pip install 'omnienv[server]' ({exc})") from None

    async def session() -> AsyncEnv:
        try:
            return await connect(url)
        except CapacityError as exc:  # the server's fix, and this run's
            raise CapacityError(
                f"{exc.message.rstrip('.')}, or lower --concurrency (each episode played at once holds one)"
            ) from exc

    return session


def show_summary(summary: Summary, title: str) -> None:
    def num(value: float | None, fmt: str = ".4f") -> str:
        return "-" if value is None or math.isnan(value) else format(value, fmt)

    table = Table("metric", "value", title=title)
    table.add_row("episodes", str(summary.episodes))
    table.add_row("mean reward", f"{num(summary.mean_reward)} ± {num(summary.reward_ci95)}")
    table.add_row("win rate", num(summary.success_rate, ".1%"))
    table.add_row("mean turns", num(summary.mean_turns, ".2f"))
    table.add_row("truncated", str(summary.truncated))
    if summary.stopped:
        table.add_row("stopped (no tool call)", str(summary.stopped))
    kinds = ", ".join(f"{kind} {count}" for kind, count in summary.failure_kinds.items())
    table.add_row("failures (not scored)", f"{summary.failures} ({kinds})" if kinds else str(summary.failures))
    if summary.prompt_tokens or summary.completion_tokens:
        table.add_row("tokens (prompt / completion)", f"{summary.prompt_tokens:,} / {summary.completion_tokens:,}")
    console.print(table)
