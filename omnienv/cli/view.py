"""``omnienv view FILE``: read a trajectory file in the browser (episodes, steps, images, rewards)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnienv.cli.common import console, fail


def view(
    file: Annotated[Path, typer.Argument(help="JSONL written by omnienv rollout or omnienv eval")],
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8600,
) -> None:
    """Serve a viewer for FILE until interrupted: filter episodes, step through their calls."""
    if not file.is_file():
        raise fail(f"no trajectory file at {file}: pass the JSONL that omnienv rollout/eval wrote (--out)")
    try:
        from omnienv.server.run import serve
        from omnienv.ui.viewer import create_viewer_app
    except ImportError as exc:
        raise fail(f"the viewer needs the server extra: pip install 'omnienv[server]' ({exc})") from None
    app = create_viewer_app(file)
    count = len(app.state.index.summaries)
    console.print(f"viewing {count} episode(s) of [bold]{file}[/] at http://{host}:{port}/")
    serve(app, host, port)
