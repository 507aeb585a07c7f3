"""``omnienv export nemo-gym ENV --split S --out FILE`` and ``omnienv export harbor ENV --out DIR``:
datasets and task directories for other frameworks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
import typer

from omnienv.cli.common import console, env_class, fail
from omnienv.core import OmniEnvError

__all__ = ["export_app", "harbor", "nemo_gym"]

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


@export_app.command("harbor")
def harbor(
    env: Annotated[str, typer.Argument(help="Environment name, 'package.module:Class' or a Harbor task folder")],
    out: Annotated[Path, typer.Option(help="The folder to write one task directory per task into")],
    split: Annotated[list[str] | None, typer.Option(help="Export only this split (repeatable); default: all")] = None,
    base: Annotated[
        str | None, typer.Option(help="The tasks' base image (Debian-based) [default: python:3.11-slim]")
    ] = None,
    ca_cert: Annotated[
        Path | None, typer.Option(help="CA bundle pip trusts inside the tasks' builds (a proxy that inspects TLS)")
    ] = None,
) -> None:
    """One Harbor task directory per task (instruction.md, task.toml, environment/, tests/, solution/).

    Each task's environment/ is its image's build context, omnienv's source included, as `omnienv
    build` writes it. Environments that sandbox the agent's code (jupyter, desktop) are refused.
    """
    cls = env_class(env)
    unknown = [s for s in split or () if s not in cls.splits]
    if unknown:
        raise fail(f"{cls.name} has no split '{unknown[0]}'; its splits: {', '.join(cls.splits) or 'none'}")
    from omnienv.envs.terminal import export_harbor

    try:
        written = export_harbor(cls, out, split, base=base, ca_cert=ca_cert)
    except OmniEnvError as exc:
        raise fail(exc.message) from None
    console.print(f"wrote {len(written)} Harbor tasks for {cls.name} to {out}")
