"""``omnienv play``: a person plays an environment in the terminal through its tools."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from omnienv.cli.common import console, env_class
from omnienv.core import EpisodeLedger, ImageBlock, Observation, OmniEnvError, TextBlock, ToolCall, as_async
from omnienv.core.adapters import ToolInfo

HELP = "Type a tool call: `guess crane`, `name key=value ...`, or JSON. `:state`, `:help`, `:quit`."


def parse_call(line: str, tools: Mapping[str, ToolInfo]) -> ToolCall:
    """Turn what a person types into a tool call; raises ValueError with the fix."""
    line = line.strip()
    if line.startswith("{"):
        data = json.loads(line)
        return ToolCall(str(data["name"]), dict(data.get("arguments") or {}))
    name, _, rest = line.partition(" ")
    spec = tools.get(name)
    if spec is None or not rest.strip():
        return ToolCall(name, {})
    properties: dict[str, Any] = spec.parameters.get("properties", {})
    if len(properties) == 1 and "=" not in rest:
        ((only, schema),) = properties.items()
        return ToolCall(name, {only: _value(rest.strip(), schema)})
    arguments: dict[str, Any] = {}
    for part in shlex.split(rest):
        key, sep, raw = part.partition("=")
        if not sep:
            raise ValueError(f"expected key=value, got {part!r}; {name} takes {', '.join(properties)}")
        arguments[key] = _value(raw, properties.get(key, {}))
    return ToolCall(name, arguments)


def _value(raw: str, schema: dict[str, Any]) -> Any:
    if schema.get("type") == "string":
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def show(observation: Observation, title: str) -> None:
    parts = []
    for block in observation.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ImageBlock):
            parts.append(f"[image {block.mime_type}, {len(block.data)} bytes]")
    style = "red" if observation.is_error else "cyan"
    # Text, not markup: what the environment wrote (and "[image ...]") is shown as it is
    console.print(Panel(Text("\n".join(parts)), title=title, border_style=style))


def show_tools(tools: Mapping[str, ToolInfo]) -> None:
    table = Table("tool", "arguments", "description", title="tools")
    for spec in tools.values():
        args = ", ".join(spec.parameters.get("properties", {})) or "-"
        table.add_row(spec.name, args, spec.description.split("\n")[0])
    console.print(table)


def play(
    env: Annotated[str, typer.Argument(help="Environment name, e.g. wordle")],
    task: Annotated[str | None, typer.Option(help="Task id, e.g. test/0003")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for the task choice")] = None,
) -> None:
    """Play an environment yourself, one tool call per line."""
    asyncio.run(_play(env, task, seed))


async def _play(name: str, task: str | None, seed: int | None) -> None:
    environment = as_async(env_class(name)())
    try:
        show(await environment.reset(task=task, seed=seed), f"{name}: prompt")
        show_tools(environment.tools)
        console.print(f"[dim]{HELP}[/]")
        ledger = EpisodeLedger(seed=seed)
        while True:
            try:
                line = console.input("[bold]> [/]")
            except EOFError:
                break
            if line.strip() in (":quit", ":q", "quit", "exit"):
                break
            if line.strip() in (":help", "help", ""):
                console.print(HELP)
                continue
            if line.strip() == ":state":
                console.print((await environment.state()).to_dict())
                continue
            try:
                result = await environment.step(parse_call(line, environment.tools))
            except (ValueError, json.JSONDecodeError) as exc:
                console.print(f"[red]{exc}[/]")
                continue
            except OmniEnvError as exc:
                console.print(f"[red]{exc.message}[/]")
                break
            ledger.record(result)
            show(result.observation, f"reward {result.reward:+.3f}  total {ledger.reward:.3f}")
            if ledger.failure:
                console.print(f"[red]environment failure: {ledger.failure.message}[/]")
            if ledger.over:
                ending = "done" if ledger.done else "truncated (turn limit)"
                console.print(f"[bold]Episode {ending}. Total reward {ledger.reward:.4f}[/]")
                break
    finally:
        await environment.close()
