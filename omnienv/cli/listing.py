"""``omnienv list``."""

from __future__ import annotations

from rich.table import Table

from omnienv.cli.common import console
from omnienv.core import OmniEnvError, load_environment, registered


def list_envs() -> None:
    """List the environments omnienv knows, with their tools and task splits."""
    table = Table("name", "description", "tools", "splits")
    for name in registered():
        try:
            cls = load_environment(name)
        except OmniEnvError as exc:
            table.add_row(name, f"[red]unavailable: {exc.message}[/]", "", "")
            continue
        splits = ", ".join(f"{split} ({len(cls.tasks(split))})" for split in cls.splits) or "-"
        table.add_row(name, cls.description, ", ".join(cls.tools), splits)
    console.print(table)
