"""What the commands share: loading an environment by name with a clean error, one console."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any, cast

import typer

from omnienv.core import EnvironmentBase, OmniEnvError, load_environment
from omnienv.server.config import LOG_LEVELS

if TYPE_CHECKING:
    from rich.console import Console


class _LazyConsole:
    """A rich ``Console`` made on first use: rich takes 20 ms to import, and ``omnienv serve``
    prints nothing until it answers requests."""

    __slots__ = ("_console", "_options")

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._made(), name)

    def __enter__(self) -> Console:  # rich's Live (a Progress) enters the console it is given
        return self._made().__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._made().__exit__(*exc)

    def _made(self) -> Console:
        console = self._console
        if console is None:
            from rich.console import Console

            console = self._console = Console(**self._options)
        return console


console = cast("Console", _LazyConsole(emoji=False))  # no ":name:" codes in our messages: their table costs 20 ms
errors = cast("Console", _LazyConsole(stderr=True, emoji=False))


def port_option(default_help: str = "TCP port (0: any free one)") -> Any:
    """A TCP port: 0 to 65535 (click refuses others with a usage error; a socket would wrap 70000
    around to 4464 and listen there)."""
    return typer.Option(min=0, max=65535, help=default_help)


def log_level_option() -> Any:
    return typer.Option(callback=_log_level, help=f"uvicorn log level: {', '.join(LOG_LEVELS)}")


def _log_level(value: str) -> str:
    """A usage error listing the levels, rather than uvicorn's KeyError once the server starts."""
    if value not in LOG_LEVELS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(LOG_LEVELS)}")
    return value


def fail(message: str) -> typer.Exit:
    from rich.markup import escape

    errors.print(f"[bold red]error:[/] {escape(message)}")
    return typer.Exit(2)


def env_class(name: str) -> type[EnvironmentBase]:
    try:
        return load_environment(name)
    except OmniEnvError as exc:
        raise fail(exc.message) from None


def is_url(target: str) -> bool:
    return target.startswith(("http://", "https://", "ws://", "wss://"))


def loaded() -> None:
    """Turn the garbage collector back on once a command has loaded what it runs on.

    :func:`omnienv.cli.main.main` turns it off first: loading makes some 100,000 objects that
    live as long as the process and almost no garbage, and passes over them cost a tenth of
    ``omnienv serve``'s start-up. Frozen, those objects stay out of later passes too. Where the
    collector is on (a test invoking the commands in its own process) this does nothing.
    """
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
