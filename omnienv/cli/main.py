"""``omnienv``: list, play, roll out and check environments (and serve them, see serve.py)."""

from __future__ import annotations

import typer

from omnienv.cli.agent import agent_app
from omnienv.cli.check import check
from omnienv.cli.demo import demo
from omnienv.cli.deploy import build, push
from omnienv.cli.eval import evaluate
from omnienv.cli.export import export_app
from omnienv.cli.harbor import harbor_app
from omnienv.cli.importing import import_app
from omnienv.cli.listing import list_envs
from omnienv.cli.mcp import mcp
from omnienv.cli.new import new
from omnienv.cli.play import play
from omnienv.cli.proxy import proxy
from omnienv.cli.rollout import rollout
from omnienv.cli.serve import serve
from omnienv.cli.view import view

app = typer.Typer(
    name="omnienv",
    help="Write an RL environment once; play it, roll it out, check it and serve it everywhere.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command("list")(list_envs)
app.command()(play)
app.command()(rollout)
app.command()(check)
app.command("eval")(evaluate)
app.command()(serve)
app.command()(mcp)
app.command()(new)
app.command()(demo)
app.command()(view)
app.command()(proxy)
app.command()(build)
app.command()(push)
app.add_typer(export_app, name="export")
app.add_typer(agent_app, name="agent")
app.add_typer(harbor_app, name="harbor")
app.add_typer(import_app, name="import")


if __name__ == "__main__":
    app()
