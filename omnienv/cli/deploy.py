"""``omnienv build`` (an environment's image) and ``omnienv push`` (a Hugging Face Space)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from omnienv.cli.common import console, fail
from omnienv.core import OmniEnvError

_ENV_HELP = "Environment name, catalog name, 'package.module:Class' or Harbor task folder"
_BASE_HELP = "Base image (Debian-based, with or without Python)"


def build(
    env: Annotated[str, typer.Argument(help=_ENV_HELP)],
    tag: Annotated[str | None, typer.Option(help="Image tag (default: omnienv-NAME:latest)")] = None,
    base: Annotated[str | None, typer.Option(help=_BASE_HELP + " [default: python:3.11-slim]")] = None,
    context: Annotated[
        Path | None, typer.Option(help="Keep the build context (Dockerfile, sources) in this folder")
    ] = None,
    ca_cert: Annotated[
        Path | None, typer.Option(help="CA bundle pip trusts inside the build (a proxy that inspects TLS)")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only write the context (needs --context)")] = False,
) -> None:
    """Build ENV's image: every transport on one port (8000), a health check, its system packages.

    Start it with `omnienv serve --image TAG`, or `WebSocketClient.from_docker_image(TAG)`.
    """
    try:
        from omnienv.deploy import DEFAULT_BASE, build_image, plan_image, write_context
    except ImportError as exc:
        raise fail(f"building images needs the deploy extra: pip install 'omnienv[deploy]' ({exc})") from None
    try:
        if dry_run:
            if context is None:
                raise fail("--dry-run writes the context only: pass --context DIR")
            write_context(plan_image(env, base=base or DEFAULT_BASE, ca_cert=ca_cert), context)
            console.print(f"wrote the build context to {context}: docker build --network host -t TAG {context}")
            return
        with console.status(f"building the image of {env}...") as status:
            built = build_image(
                env,
                tag=tag,
                base=base or DEFAULT_BASE,
                context=context,
                ca_cert=ca_cert,
                progress=lambda line: status.update(f"[dim]{line[:100]}[/]"),
            )
    except OmniEnvError as exc:
        raise fail(exc.message) from None
    console.print(f"built [bold]{built}[/]: omnienv serve --image {built}")


def push(
    env: Annotated[str, typer.Argument(help=_ENV_HELP)],
    space: Annotated[str, typer.Option(help="The Space, OWNER/NAME")],
    out: Annotated[Path | None, typer.Option(help="Write the bundle here (default: a temporary folder)")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only write the bundle (with --out), do not upload")
    ] = False,
    token: Annotated[str | None, typer.Option(envvar="HF_TOKEN", help="Hugging Face token", show_default=False)] = None,
    private: Annotated[bool, typer.Option("--private", help="Create the Space private")] = False,
    base: Annotated[str | None, typer.Option(help=_BASE_HELP + " [default: python:3.11-slim]")] = None,
) -> None:
    """Write ENV as a Hugging Face Space (Docker SDK) and upload it; --dry-run --out DIR only writes it.

    The bundle's entry command serves ENV locally too: PYTHON=python3 sh DIR/entrypoint.sh
    """
    try:
        from omnienv.deploy import DEFAULT_BASE, push_space, write_space_bundle
    except ImportError as exc:
        raise fail(f"Spaces bundles need the deploy extra: pip install 'omnienv[deploy]' ({exc})") from None
    if dry_run and out is None:
        raise fail("--dry-run only writes the bundle: pass --out DIR")
    try:
        if out is not None:
            bundle = write_space_bundle(env, space, out, base=base or DEFAULT_BASE)
            console.print(f"wrote the Space bundle to {bundle} (try it: PYTHON=python3 sh {bundle}/entrypoint.sh)")
            if dry_run:
                return
            url = push_space(bundle, space, token=token, private=private)
        else:
            with tempfile.TemporaryDirectory(prefix="omnienv-space-") as folder:
                bundle = write_space_bundle(env, space, Path(folder) / "bundle", base=base or DEFAULT_BASE)
                url = push_space(bundle, space, token=token, private=private)
    except OmniEnvError as exc:
        raise fail(exc.message) from None
    console.print(f"pushed [bold]{space}[/]: {url}")
