"""``omnienv import``: give another framework's environment a name every command takes.

``omnienv import openenv http://host:port --name echo`` (an OpenEnv server) or
``omnienv import openenv my_pkg.server:MyEnv --name mine`` (an OpenEnv Environment class, run
in-process) records the name in ``imports.json`` (:mod:`omnienv.catalog.imports`); then
``omnienv serve echo``, ``omnienv check echo`` and ``omnienv rollout echo`` use it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from omnienv.catalog import imports
from omnienv.cli.common import console, fail, is_url
from omnienv.core import OmniEnvError, load_environment, registered

import_app = typer.Typer(help="Give environments of other frameworks a name (kept in imports.json).")


def openenv_target(target: str) -> str:
    """The importer's spelling of ``target``: a server URL or ``module:Class``."""
    if target.startswith(("openenv+", "openenv/")):
        return target
    if is_url(target):
        return f"openenv+{target}"
    if ":" in target:
        return f"openenv/{target}"
    raise fail(
        f"'{target}' is neither an OpenEnv server URL (http://host:port) nor an Environment class (module:Class)"
    )


@import_app.command("openenv")
def import_openenv(
    target: Annotated[str, typer.Argument(help="An OpenEnv server URL (http://host:port) or module:Class")],
    name: Annotated[str, typer.Option("--name", "-n", help="The name to load it by")],
    check: Annotated[bool, typer.Option(help="Load it now (a server must be up) to catch a wrong target")] = True,
) -> None:
    """Register an OpenEnv server or Environment class under a name."""
    if name in registered() or "/" in name or ":" in name:
        raise fail(f"'{name}' is taken or reserved: pick a plain name not in `omnienv list`")
    spelled = openenv_target(target)
    if not imports.is_import_target(spelled):
        raise fail(f"'{target}' is not an OpenEnv target: write http://host:port or module:Class")
    if check:
        try:
            cls = load_environment(spelled)
        except OmniEnvError as exc:
            raise fail(f"{exc.message} (pass --no-check to register it anyway)") from None
        console.print(f"{spelled}: tools {', '.join(cls.tools)}")
    imports.add(name, "openenv", spelled)
    console.print(f"'{name}' -> {spelled}, in {imports.config_path()}")


@import_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="An imported environment's name")]) -> None:
    """Forget an imported environment's name."""
    if not imports.remove(name):
        raise fail(f"no imported environment named '{name}'")
    console.print(f"forgot '{name}'")
