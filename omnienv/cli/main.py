"""``omnienv``: list, play, roll out and check environments (and serve them, see serve.py).

The console script imports only the command it runs: ``omnienv serve`` should not pay for the
libraries of ``omnienv agent`` or ``omnienv view`` before it can answer its first request.
``app`` (the whole command tree, for ``--help`` and for tests) is built on first use.
Typer itself is imported by :func:`main`, after it has turned the garbage collector off (see
:func:`omnienv.cli.common.loaded`).
"""

from __future__ import annotations

import gc
import importlib
import sys
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

__all__ = ["app", "main"]

app: typer.Typer
"""Every command (built on first use by :func:`whole_app`): for ``--help`` listings and tests."""

HELP = "Write an RL environment once; play it, roll it out, check it and serve it everywhere."
COMMANDS = {
    "list": "omnienv.cli.listing:list_envs",
    "play": "omnienv.cli.play:play",
    "rollout": "omnienv.cli.rollout:rollout",
    "check": "omnienv.cli.check:check",
    "eval": "omnienv.cli.eval:evaluate",
    "serve": "omnienv.cli.serve:serve",
    "mcp": "omnienv.cli.mcp:mcp",
    "new": "omnienv.cli.new:new",
    "demo": "omnienv.cli.demo:demo",
    "view": "omnienv.cli.view:view",
    "proxy": "omnienv.cli.proxy:proxy",
    "build": "omnienv.cli.deploy:build",
    "push": "omnienv.cli.deploy:push",
}
"""Commands: name -> ``module:function``."""
GROUPS = {
    "export": "omnienv.cli.export:export_app",
    "agent": "omnienv.cli.agent:agent_app",
    "harbor": "omnienv.cli.harbor:harbor_app",
    "import": "omnienv.cli.importing:import_app",
}
"""Command groups: name -> ``module:Typer``."""
SERVERS = frozenset({"serve"})
"""Commands timed to their first answer: they call :func:`~omnienv.cli.common.loaded` themselves,
once their server's modules are loaded too."""


def _load(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _typer() -> typer.Typer:
    import typer

    return typer.Typer(name="omnienv", help=HELP, no_args_is_help=True, pretty_exceptions_enable=False)


def _add(tree: typer.Typer, name: str) -> None:
    if name in COMMANDS:
        tree.command(name)(_load(COMMANDS[name]))
    else:
        tree.add_typer(_load(GROUPS[name]), name=name)


@cache
def whole_app() -> typer.Typer:
    """Every command: what ``omnienv --help`` lists."""
    tree = _typer()
    for name in (*COMMANDS, *GROUPS):
        _add(tree, name)
    return tree


def main() -> None:
    """The ``omnienv`` console script."""
    gc.disable()
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name not in COMMANDS and name not in GROUPS:  # help, a typo: click answers from the whole tree
        tree = whole_app()
    else:
        tree = _typer()
        tree.callback()(_root)  # a group even with one command: the command's name stays in the command line
        _add(tree, name)
    if name not in SERVERS:
        from omnienv.cli.common import loaded

        loaded()
    try:
        tree()
    except Exception as exc:
        message = _said_plainly(exc)
        if message is None:
            raise
        from omnienv.cli.common import fail

        raise SystemExit(fail(message).exit_code) from None


def _said_plainly(exc: Exception) -> str | None:
    """What a command's error says to the user, where it is their input's fault and not a bug:
    omnienv's own errors name the fix in their message, and a path the user gave that cannot be
    read or written (a directory given as ``--out``) is named with the reason. Anything else is a
    bug, and its traceback is shown whole."""
    from omnienv.core import OmniEnvError

    if isinstance(exc, OmniEnvError):
        return exc.message
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return None


def _root() -> None:
    """Write an RL environment once; play it, roll it out, check it and serve it everywhere."""


def __getattr__(name: str) -> Any:
    if name == "app":
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
