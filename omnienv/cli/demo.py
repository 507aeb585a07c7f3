"""``omnienv demo``: the main job end to end: serve Wordle, play it over the WebSocket, summarise."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnienv.cli.common import console
from omnienv.cli.rollout import play_episodes


def demo(
    episodes: Annotated[int, typer.Option(min=1, help="Games to play")] = 50,
    concurrency: Annotated[int, typer.Option(min=1, help="Sessions played at once")] = 8,
    out: Annotated[Path, typer.Option(help="Trajectories (JSONL)")] = Path("demo-trajectories.jsonl"),
) -> None:
    """Serve Wordle on a free local port and let the scripted solver play it over /ws."""
    from omnienv.app import create_app
    from omnienv.server import running

    with running(create_app("wordle")) as url:
        console.print(f"serving wordle at {url} (WebSocket {url.replace('http', 'ws')}/ws)")
        play_episodes("wordle", "solver", episodes, "test", out, 0, concurrency, None, url)
