"""``omnienv view FILE``: read a trajectory file or a training log in the browser."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from omnienv.cli.common import console, fail, port_option


def view(
    file: Annotated[Path, typer.Argument(help="JSONL written by omnienv rollout or omnienv eval, or a training log")],
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: Annotated[int, port_option()] = 8600,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            metavar="NAME[:PORT]",
            help="Also answer requests whose Host is NAME (repeatable; '*': any); loopback names and the "
            "bound host are always answered",
        ),
    ] = None,
) -> None:
    """Serve a viewer for FILE until interrupted: episodes to filter and step through, and a summary
    page with charts (rewards, success per task and split, turns, failures; a training log's curves)."""
    if not file.is_file():
        raise fail(f"no trajectory file at {file}: pass the JSONL that omnienv rollout/eval wrote (--out)")
    try:
        from omnienv.server.origins import WILDCARDS
        from omnienv.server.run import serve
        from omnienv.ui.viewer import create_viewer_app
    except ImportError as exc:
        raise fail(f"the viewer needs the server extra: pip install 'omnienv[server]' ({exc})") from None
    try:
        app = create_viewer_app(file, allow_hosts=tuple(allow_host or ()))
    except ValueError as exc:
        raise fail(str(exc)) from None
    index = app.state.index

    def announce(bound: int) -> None:  # once it answers, on the port it got (for --port 0)
        url = f"http://{host}:{bound}"
        if index.kind == "training":
            shown = f"the training log of {len(index.train_steps)} step(s)"
            console.print(f"viewing {shown} [bold]{escape(str(file))}[/] at {url}/", soft_wrap=True)
        else:
            console.print(
                f"viewing {len(index.summaries)} episode(s) of [bold]{escape(str(file))}[/] at {url}/ "
                f"(charts: {url}/ui/summary.html?source=server)",
                soft_wrap=True,
            )
        if index.problem_count:
            first = "; ".join(index.report(3))
            console.print(
                f"[yellow]{index.problem_count} line(s) skipped, not episodes ({escape(first)}): is this "
                "the JSONL that omnienv rollout/eval wrote (--out)?[/]",
                soft_wrap=True,
            )
        if host.strip().lower() in WILDCARDS and not allow_host:
            console.print(
                f"[yellow]bound to {host}: requests are answered only when their Host is a loopback name; "
                "pass --allow-host NAME for each name or address the browser uses to reach this machine[/]",
                soft_wrap=True,
            )

    serve(app, host, port, after_start=announce)
