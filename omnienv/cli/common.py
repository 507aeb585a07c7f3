"""What the commands share: loading an environment by name with a clean error, one console."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

from omnienv.core import EnvironmentBase, OmniEnvError, load_environment

console = Console(emoji=False)  # no ":name:" codes in our messages; their table costs 20 ms of start-up
errors = Console(stderr=True, emoji=False)


def fail(message: str) -> typer.Exit:
    errors.print(f"[bold red]error:[/] {escape(message)}")
    return typer.Exit(2)


def env_class(name: str) -> type[EnvironmentBase]:
    try:
        return load_environment(name)
    except OmniEnvError as exc:
        raise fail(exc.message) from None


def is_url(target: str) -> bool:
    return target.startswith(("http://", "https://", "ws://", "wss://"))
