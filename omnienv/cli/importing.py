"""``omnienv import``: give another framework's environment a name every command takes.

- ``omnienv import openenv http://host:port --name echo`` (an OpenEnv server) or
  ``omnienv import openenv my_pkg.server:MyEnv --name mine`` (an OpenEnv Environment class, run
  in-process);
- ``omnienv import ors http://host:port --name game [--env NAME]`` (an ORS server's environment);
- ``omnienv import verifiers my_env_module --name mine [--args JSON]`` (a Verifiers environment
  module, classic or v1, built with those arguments)

record the name in ``imports.json`` (:mod:`omnienv.catalog.imports`); then ``omnienv serve
NAME``, ``omnienv check NAME`` and ``omnienv rollout NAME`` use it, and ``omnienv list`` shows it
with its source and version. Each loads its target once first (``--no-check`` skips that), so a
typo, a server that is down or a missing library is reported now, naming what to install.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from omnienv.catalog import imports
from omnienv.cli.common import console, fail, is_url
from omnienv.core import EnvironmentBase, OmniEnvError, load_environment, registered

import_app = typer.Typer(help="Give environments of other frameworks a name (kept in imports.json).")

CHECK_HELP = "Load it now (a server must be up) to catch a wrong target"


def _check_name(name: str) -> None:
    """Refuse the name before the target is loaded: a bad spelling, or a built-in's name."""
    imports.check_name(name)
    if name in registered():
        raise fail(f"'{name}' is taken: pick a name not in `omnienv list`")


def _load(target: str) -> type[EnvironmentBase]:
    """The target's class, loaded now; a failure says how to register it anyway."""
    try:
        return load_environment(target)
    except OmniEnvError as exc:
        raise fail(f"{exc.message} (pass --no-check to register it anyway)") from None


def _show(target: str, cls: type[EnvironmentBase]) -> None:
    splits = ", ".join(f"{split} ({len(cls.tasks(split))})" for split in cls.splits) or "none"
    console.print(f"{target}: tools {', '.join(cls.tools)}; splits {splits}")


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
    check: Annotated[bool, typer.Option(help=CHECK_HELP)] = True,
) -> None:
    """Register an OpenEnv server or Environment class under a name."""
    _check_name(name)
    spelled = openenv_target(target)
    if not imports.is_import_target(spelled):
        raise fail(f"'{target}' is not an OpenEnv target: write http://host:port or module:Class")
    if check:
        cls = _load(spelled)
        console.print(f"{spelled}: tools {', '.join(cls.tools)}")
    imports.add(name, "openenv", spelled)
    console.print(f"'{name}' -> {spelled}, in {imports.config_path()}")


@import_app.command("ors")
def import_ors(
    url: Annotated[str, typer.Argument(help="The ORS server's URL (http://host:port)")],
    name: Annotated[str, typer.Option("--name", "-n", help="The name to load it by")],
    env: Annotated[str | None, typer.Option(help="Which of the server's environments (default: its first)")] = None,
    check: Annotated[bool, typer.Option(help=CHECK_HELP)] = True,
) -> None:
    """Register an ORS (Open Reward Standard) server's environment under a name."""
    from omnienv.catalog.ors import is_ors_url

    _check_name(name)
    spelled = url if url.startswith("ors+") else f"ors+{url}"
    if env is not None:
        spelled = f"{spelled.partition('#')[0]}#{env}"
    if not is_ors_url(spelled):
        raise fail(f"'{url}' is not an ORS server URL: write http://host:port (and --env NAME for one of several)")
    version = None
    if check:
        cls = _load(spelled)
        version = getattr(cls, "server_version", None)
        _show(spelled, cls)
    imports.add(name, "ors", spelled, version=version)
    console.print(f"'{name}' -> {spelled}, in {imports.config_path()}")


def _arguments(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise fail(f"--args is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise fail(f"--args must be a JSON object of keyword arguments, got {text}")
    return value


@import_app.command("verifiers")
def import_verifiers(
    module: Annotated[str, typer.Argument(help="The environment's module (importable here), e.g. my_env")],
    name: Annotated[str, typer.Option("--name", "-n", help="The name to load it by")],
    args: Annotated[
        str | None, typer.Option("--args", help="load_environment's keyword arguments (v1: the taskset config), JSON")
    ] = None,
    check: Annotated[bool, typer.Option(help=CHECK_HELP)] = True,
) -> None:
    """Register a Verifiers environment module (classic load_environment or a v1 taskset) under a name."""
    from omnienv.catalog import verifiers

    _check_name(name)
    target = module if module.startswith(verifiers.PREFIX) else f"{verifiers.PREFIX}{module}"
    if not verifiers.is_verifiers_name(target):
        raise fail(f"'{module}' is not a module name (dotted Python identifiers, e.g. my_env or pkg.my_env)")
    arguments = _arguments(args)
    if check:
        try:
            cls = verifiers.environment(target, json.dumps(arguments or {}, sort_keys=True))
        except OmniEnvError as exc:
            raise fail(f"{exc.message} (pass --no-check to register it anyway)") from None
        _show(target, cls)
    imports.add(name, "verifiers", target, args=arguments or None, version=verifiers.version())
    console.print(f"'{name}' -> {target}, in {imports.config_path()}")


@import_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="An imported environment's name")]) -> None:
    """Forget an imported environment's name."""
    if not imports.remove(name):
        raise fail(f"no imported environment named '{name}'")
    console.print(f"forgot '{name}'")
