"""``omnienv check``: the contract checks, in-process by name or over the wire by URL."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from omnienv.cli.common import console, env_class, fail, is_url
from omnienv.core import CheckReport, OmniEnvError, SessionLostError, check_env


def check(
    target: Annotated[str, typer.Argument(help="Environment name (in-process) or server URL")],
) -> None:
    """Check that an environment keeps the contract; exits 1 if any check fails."""
    if is_url(target):
        try:
            from omnienv.client import check_url
        except ImportError as exc:
            raise fail(f"checking a URL needs the server extra: pip install 'omnienv[server]' ({exc})") from None
        _reach(target)
        report = check_url(target)
    else:
        report = check_env(env_class(target))
    show_report(report)
    if not report.ok:
        raise typer.Exit(1)


def _reach(url: str) -> None:
    """Open one session first: a server that is down is said once, not as every check failing. One
    that answers, however wrongly, is left to the checks to describe."""
    from omnienv.client import WebSocketClient

    try:
        WebSocketClient.connect(url).close()
    except SessionLostError as exc:
        raise fail(f"cannot reach the server at {url}: {exc.message}; start it or fix the URL") from None
    except OmniEnvError:
        pass


def show_report(report: CheckReport) -> None:
    table = Table("check", "result", "how to fix", title=f"contract checks: {report.target}")
    for result in report.results:
        mark = "[green]pass[/]" if result.passed else "[red]FAIL[/]"
        table.add_row(result.name.replace("_", " "), mark, result.message)
    console.print(table)
    verdict = "[green]all checks passed[/]" if report.ok else f"[red]{len(report.failures)} failed[/]"
    console.print(verdict)
