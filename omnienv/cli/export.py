"""``omnienv export nemo-gym ENV --split S --out FILE``: datasets for other frameworks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
import typer

from omnienv.cli.common import console, env_class, fail

__all__ = ["export_app", "nemo_gym"]

export_app = typer.Typer(help="Write an environment's tasks as another framework's dataset.", no_args_is_help=True)


@export_app.command("nemo-gym")
def nemo_gym(
    env: Annotated[str, typer.Argument(help="Environment name or 'package.module:Class'")],
    split: Annotated[str, typer.Option(help="Which split's tasks to export")] = "train",
    out: Annotated[Path, typer.Option(help="The JSONL file to write")] = Path("nemo_gym.jsonl"),
    limit: Annotated[int | None, typer.Option(help="Export at most this many tasks")] = None,
) -> None:
    """One NeMo Gym row per task: prompt, tools (responses_create_params.tools) and task_id; never the answer."""
    cls = env_class(env)
    if split not in cls.splits:
        raise fail(f"{cls.name} has no split '{split}'; its splits: {', '.join(cls.splits) or 'none'}")
    if limit is not None and limit < 0:
        raise fail("--limit must be >= 0")
    try:
        from omnienv.dialects.nemo_gym import nemo_gym_rows
    except ImportError as exc:
        raise fail(f"exporting needs the server extra: pip install 'omnienv[server]' ({exc})") from None
    count = 0
    with out.open("wb") as file:
        for row in nemo_gym_rows(cls, split, limit):
            file.write(orjson.dumps(row) + b"\n")
            count += 1
    console.print(f"wrote {count} NeMo Gym rows for {cls.name}/{split} to {out}")
