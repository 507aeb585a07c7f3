"""``omnienv agent``: loop-owning harnesses (mini-swe-agent, any agent CLI) on environments.

``omnienv agent run HARNESS ENV --model M --base-url URL`` runs the harness once per episode with
its commands in the environment's sandbox and its model calls through the capture proxy, with a
progress bar and a summary like ``omnienv eval``'s; ``omnienv agent list`` lists the built-in ones.
The work is :func:`omnienv.agents.run_agents`; this is its command line.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from omnienv.cli.common import console, env_class, fail
from omnienv.cli.rollout import exit_if_nothing_scored, show_summary
from omnienv.core import OmniEnvError

__all__ = ["agent_app"]

agent_app = typer.Typer(
    help="Run loop-owning agent harnesses (mini-swe-agent, agent CLIs) on environments with a shell.",
    no_args_is_help=True,
)


@agent_app.command("list")
def list_harnesses() -> None:
    """List the built-in harnesses (any TOML harness spec file works too)."""
    from omnienv.agents import BUILTIN

    table = Table("harness", "what it is")
    for name, description in BUILTIN.items():
        table.add_row(name, description)
    table.add_row("PATH.toml", "any agent CLI, described by a harness spec file (docs/agents.md)")
    console.print(table)


@agent_app.command("run")
def run(
    harness: Annotated[str, typer.Argument(help="mini-swe-agent, or the path of a harness spec (.toml)")],
    env: Annotated[str, typer.Argument(help="Environment with a shell tool, e.g. terminal")],
    model: Annotated[str, typer.Option(help="Model name as the endpoint knows it")],
    base_url: Annotated[
        str | None, typer.Option(help="The model's OpenAI-compatible endpoint, e.g. http://host:8000/v1")
    ] = None,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the API key")] = "OPENAI_API_KEY",
    episodes: Annotated[int, typer.Option(min=1)] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes (harness processes) at once")] = 1,
    split: Annotated[str | None, typer.Option(help="Task split to cycle through, e.g. test")] = None,
    task: Annotated[list[str] | None, typer.Option(help="Task id to play (repeatable, cycled); beats --split")] = None,
    seed: Annotated[int, typer.Option(help="Episode i uses seed+i")] = 0,
    timeout: Annotated[
        float | None, typer.Option(min=0.001, help="Seconds per episode before the harness is stopped")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Trajectories (JSONL); the summary goes beside it")] = None,
    records: Annotated[Path | None, typer.Option(help="Training records (JSONL), one per episode")] = None,
    url: Annotated[str | None, typer.Option(help="Sessions on a running omnienv server instead")] = None,
    shell_tool: Annotated[str | None, typer.Option(help="The environment's shell tool (default: found)")] = None,
    python: Annotated[str | None, typer.Option(help="mini-swe-agent: the interpreter it is installed for")] = None,
    workdir: Annotated[Path | None, typer.Option(help="Keep the episodes' scratch directories (logs) here")] = None,
    request_tokens: Annotated[
        bool,
        typer.Option(
            "--request-tokens/--no-request-tokens",
            help="Ask the endpoint for token ids and log-probabilities (vLLM's fields); off for one that rejects them",
        ),
    ] = True,
) -> None:
    """Run HARNESS on episodes of ENV: commands in its sandbox, model calls captured token-exact."""
    try:
        from omnienv.agents import find_shell_tool, load_harness, run_agents
        from omnienv.rollout.trajectory import TRAINER_END
    except ImportError as exc:
        raise fail(f"agent runs need the server extra: pip install 'omnienv[server]' ({exc})") from None
    cls = env_class(env)
    upstream = base_url or os.environ.get("OPENAI_BASE_URL")
    if not upstream:
        raise fail("--base-url (or $OPENAI_BASE_URL) must name the model's OpenAI-compatible endpoint")
    out = out or Path(f"agent-{cls.name}.jsonl")
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    try:
        chosen = load_harness(harness, python=python)
        find_shell_tool(cls.tools, shell_tool)  # what cannot run is said before any progress is shown
        chosen.check()
        with Progress(*columns, console=console) as progress:
            bar = progress.add_task(f"{cls.name} x {chosen.name} ({model})", total=episodes)
            result = run_agents(
                chosen,
                cls,
                model=model,
                base_url=upstream,
                api_key=os.environ.get(api_key_env) or "omnienv",
                episodes=episodes,
                split=split,
                tasks=task,
                seed=seed,
                concurrency=concurrency,
                timeout_s=timeout,
                url=url,
                shell_tool=shell_tool,
                out=out,
                records=records,
                workdir=workdir,
                request_tokens=request_tokens,
                on_episode=lambda _: progress.advance(bar),
            )
    except OmniEnvError as exc:
        raise fail(exc.message) from None
    title = f"{cls.name}, {chosen.name}, model {model}" + (f", split {split}" if split else "")
    show_summary(result.summary, title=title)
    stops = Counter(str(item.harness.get("stopped")) for item in result.episodes)
    calls = [call for item in result.episodes for call in item.record.calls]
    with_ids = sum(call.has_tokens for call in calls)
    commands = [sum(step.call.name != TRAINER_END for step in item.episode.steps) for item in result.episodes]
    mean = sum(commands) / len(commands) if commands else math.nan
    console.print(f"harness ends: {', '.join(f'{name}: {count}' for name, count in sorted(stops.items()))}")
    console.print(f"commands per episode: {mean:.1f}; model calls captured: {len(calls)}, {with_ids} with token ids")
    console.print(f"trajectories: {out}" + (f"\nrecords: {records}" if records else ""))
    failed = (item.episode.failure for item in result.episodes if item.episode.failure is not None)
    exit_if_nothing_scored(result.summary, next(failed, None))
