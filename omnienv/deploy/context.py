"""The build context of an environment's image: a Dockerfile, omnienv's source, the author's code.

One image serves one environment on every transport (``python -m omnienv.app``) on one port, with a
health check. What goes in is read from the environment itself: its omnienv extras and Debian
packages (``EnvironmentBase.extras`` / ``system_packages``, a catalog source's extra), and, for an
environment that lives outside omnienv, its code: a Harbor task folder, or the package that defines
``package.module:Class`` (with its project, when a ``pyproject.toml`` sits beside the package, so
its dependencies are installed too).

omnienv goes in as source with a ``pyproject.toml`` written from the installed distribution's own
metadata, so the image gets the same version and requirements whether omnienv was installed from a
wheel or from a checkout, and never depends on a registry that holds omnienv.
"""

from __future__ import annotations

import gzip
import importlib.metadata as metadata
import importlib.util
import os
import re
import shlex
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import omnienv
from omnienv.core import EnvironmentBase
from omnienv.core.registry import load_environment
from omnienv.deploy.errors import DeployError
from omnienv.deploy.sources import MARKER, copy_folder, dockerignore

__all__ = [
    "DEFAULT_BASE",
    "DeployError",
    "ImagePlan",
    "docker_quoted",
    "install_steps",
    "plan_image",
    "write_context",
    "write_sources",
]

DEFAULT_BASE = "python:3.11-slim"
"""A public slim Debian image with Python 3.11; any Debian-based image with or without Python works."""
PORT = 8000
ROOT = "/opt/omnienv"
"""Where everything lives inside the image: ``venv/``, ``omnienv-src/``, ``app/``, ``entrypoint.sh``."""
HEALTH_PROBE = "import os, urllib.request as u; u.urlopen('http://127.0.0.1:%s/health' % os.environ['PORT'], timeout=4)"
_PACKAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
PACKED = ("omnienv-src.tar.gz", "app.tar.gz")
"""The archives of a packed context (:func:`write_sources`): omnienv's source, the author's code."""
_PACKED_TIME = 1577836800  # 2020-01-01: one time for every packed file (a wheel cannot hold times before 1980)


@dataclass(frozen=True, slots=True)
class ImagePlan:
    """What an environment's image holds and runs; :func:`write_context` turns it into files."""

    env: str  # what the entry command serves: a name, 'module:Class', or a task folder inside the image
    name: str  # the environment's name (image tags and labels)
    extras: tuple[str, ...]
    system_packages: tuple[str, ...]
    base: str = DEFAULT_BASE
    app: tuple[tuple[Path, str], ...] = field(default=())  # (host path, path under app/) of the author's code
    projects: tuple[str, ...] = ()  # paths under app/ to pip install (the author's projects)
    variables: tuple[tuple[str, str], ...] = ()  # extra ENV lines (a Space's allowed host)
    ca_cert: Path | None = None  # a CA bundle pip trusts while building (a proxy that inspects TLS)

    @property
    def sandboxed(self) -> bool:
        """Whether the environment runs the agent's code in bubblewrap (the container must allow it)."""
        return "bubblewrap" in self.system_packages


def plan_image(env: str, *, base: str = DEFAULT_BASE, ca_cert: Path | None = None) -> ImagePlan:
    """The image plan for ``env``: any name ``omnienv serve`` takes (a reference environment, a
    scaffolded package's entry-point name, ``module:Class``, a catalog name, a Harbor task folder).

    ``ca_cert``: a CA bundle for pip inside the build, where the machine reaches package indexes
    through a proxy that inspects TLS (it stays in the image, at ``/opt/omnienv/build-ca.pem``)."""
    if ca_cert is not None and not ca_cert.is_file():
        raise DeployError(f"no CA bundle at {ca_cert}: pass the PEM file pip uses here (pip config list)")
    if ca_cert is not None and b"-----BEGIN CERTIFICATE-----" not in ca_cert.read_bytes():
        raise DeployError(f"{ca_cert} holds no PEM certificate: pass the PEM file pip uses here (pip config list)")
    cls = load_environment(env)
    extras = {"server", *cls.extras}
    app: list[tuple[Path, str]] = []
    projects: list[str] = []
    served = env
    if os.path.isdir(env):
        folder = Path(env).resolve()
        app.append((folder, f"tasks/{safe_name(folder.name)}"))
        served = f"{ROOT}/app/tasks/{safe_name(folder.name)}"
    elif not cls.__module__.startswith("omnienv."):
        code, project = _author_code(cls)
        if project is None:
            app.append((code, code.name))  # an importable name: it stays as it is
        else:
            app.append((project, safe_name(project.name)))
            projects.append(safe_name(project.name))
        served = f"{cls.__module__}:{cls.__qualname__}"
    return ImagePlan(
        env=served,
        name=cls.name,
        extras=tuple(sorted(extras)),
        system_packages=tuple(cls.system_packages),
        base=base,
        app=tuple(app),
        projects=tuple(projects),
        ca_cert=ca_cert,
    )


def safe_name(name: str) -> str:
    """``name`` as a folder name inside the image: only ``[A-Za-z0-9._-]``, no leading dot or dash.
    The generated files name these folders, and a name such as ``tasks$(id)`` must stay a name."""
    return _UNSAFE.sub("-", name).lstrip(".-") or "app"


def _author_code(cls: type[EnvironmentBase]) -> tuple[Path, Path | None]:
    """The top-level package (or module) defining ``cls``, and its project folder if it has one."""
    top = cls.__module__.split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin in (None, "built-in", "frozen"):
        raise DeployError(f"cannot find the code of {cls.__module__}: pass an importable 'package.module:Class'")
    origin = Path(spec.origin)
    code = origin.parent if origin.name == "__init__.py" else origin
    if "site-packages" in code.parts or "dist-packages" in code.parts:
        # installed, not a checkout: its distribution's source is not here, so it goes in as code
        return code, None
    project = code.parent
    return code, (project if (project / "pyproject.toml").is_file() else None)


def write_context(plan: ImagePlan, out: Path) -> Path:
    """Write the build context of ``plan`` into ``out`` and return it.

    ``out`` is new, empty, or a context written before (it holds ``.omnienv-context``), which is
    cleared: any other folder is refused, since clearing it would delete someone's files."""
    _make_empty(out)
    (out / MARKER).write_text("Written by omnienv build/push: the next write to this folder clears it.\n")
    write_sources(plan, out)
    (out / "entrypoint.sh").write_text(entrypoint(plan))
    (out / "Dockerfile").write_text(dockerfile(plan))
    (out / ".dockerignore").write_text(dockerignore())
    return out


def write_sources(plan: ImagePlan, out: Path, *, packed: bool = False, skip: Path | None = None) -> list[Path]:
    """Write what :func:`install_steps` copies into the image into the folder ``out`` (which exists)
    and return the files and folders written: omnienv's source (``omnienv-src/``), the author's code
    (``app/``) and the CA bundle (``build-ca.pem``).

    ``packed``: the two folders go in as gzipped tar archives instead (:data:`PACKED`; ``app.tar.gz``
    only where there is author code), which ``ADD`` unpacks: one file each, the same bytes for the
    same sources, for contexts written many times over (an exported Harbor task's ``environment/``).
    ``skip``: a folder never copied into the sources (default ``out``: the context being written)."""
    skip = skip or out
    if not packed:
        _write_omnienv_source(out / "omnienv-src", plan.extras, skip)
        _write_app(plan, out / "app", skip)
        written = [out / "omnienv-src", out / "app"]
    else:
        written = []
        with tempfile.TemporaryDirectory(prefix="omnienv-sources-") as scratch:
            _write_omnienv_source(Path(scratch) / "omnienv-src", plan.extras, skip)
            _pack(Path(scratch) / "omnienv-src", out / PACKED[0])
            written.append(out / PACKED[0])
            if plan.app:
                _write_app(plan, Path(scratch) / "app", skip)
                _pack(Path(scratch) / "app", out / PACKED[1])
                written.append(out / PACKED[1])
    if plan.ca_cert is not None:
        shutil.copy(plan.ca_cert, out / "build-ca.pem")
        written.append(out / "build-ca.pem")
    return written


def _write_app(plan: ImagePlan, app: Path, skip: Path) -> None:
    app.mkdir()
    for source, inside in plan.app:
        target = app / inside
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            copy_folder(source, target, skip=skip)
        else:
            shutil.copy2(source, target)


def _pack(folder: Path, archive: Path) -> None:
    """``folder`` as a gzipped tar of ``folder.name/...``: sorted, owned by root, one time for
    every entry, so the same files always make the same bytes (and one layer in Docker's cache)."""

    def normal(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = _PACKED_TIME
        return info

    with (
        archive.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for here, folders, files in os.walk(folder):  # links are entries, never followed
            folders.sort()
            for name in ["", *sorted([*files, *(f for f in folders if os.path.islink(os.path.join(here, f)))])]:
                path = Path(here, name) if name else Path(here)
                tar.add(path, arcname=path.relative_to(folder.parent).as_posix(), recursive=False, filter=normal)


def _make_empty(out: Path) -> None:
    """Make ``out`` an empty folder, clearing it only when it holds omnienv's marker and is not
    the working folder or one above it (a shell standing in it would lose its place, and more)."""
    if not out.exists():
        out.mkdir(parents=True)
        return
    if not out.is_dir():
        raise DeployError(f"{out} exists and is not a build context (it is not a folder): pass an empty or new folder")
    entries = list(out.iterdir())
    if not entries:
        return
    if not (out / MARKER).is_file():
        raise DeployError(
            f"{out} exists and is not a build context (it holds files and no {MARKER}, which omnienv writes "
            "into every context): pass an empty or new folder"
        )
    if Path.cwd().resolve().is_relative_to(out.resolve()):
        raise DeployError(f"{out} is the working folder or holds it, so it is not cleared: pass a new folder")
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _write_omnienv_source(target: Path, extras: tuple[str, ...], out: Path) -> None:
    package = Path(omnienv.__file__).parent
    target.mkdir()
    copy_folder(package, target / "omnienv", skip=out)
    requirements = sorted(set(_requirements(extras)))
    lines = ",\n    ".join(f'"{r}"' for r in requirements)
    (target / "pyproject.toml").write_text(
        "# Written by omnienv build from the installed distribution's metadata.\n"
        '[build-system]\nrequires = ["hatchling>=1.25"]\nbuild-backend = "hatchling.build"\n\n'
        f'[project]\nname = "omnienv"\nversion = "{omnienv.__version__}"\nrequires-python = ">=3.11"\n'
        f"dependencies = [\n    {lines},\n]\n\n"
        '[project.scripts]\nomnienv = "omnienv.cli.main:main"\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["omnienv"]\n'
    )


def _requirements(extras: tuple[str, ...]) -> list[str]:
    """omnienv's requirements with ``extras``, markers evaluated here, ``omnienv[x]`` expanded."""
    from packaging.requirements import Requirement

    declared = [Requirement(line) for line in metadata.requires("omnienv") or []]
    known = set(metadata.metadata("omnienv").get_all("Provides-Extra") or [])
    unknown = sorted(set(extras) - known)
    if unknown:
        raise DeployError(f"omnienv has no extra {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    wanted, todo, found = set(), list(extras), []
    while todo:
        extra = todo.pop()
        if extra in wanted:
            continue
        wanted.add(extra)
        for requirement in declared:
            if requirement.marker is None or not requirement.marker.evaluate({"extra": extra}):
                continue
            if requirement.name == "omnienv":
                todo.extend(requirement.extras)
            else:
                requirement.marker = None  # evaluated: the image installs exactly these
                found.append(str(requirement))
    found += [str(r) for r in declared if r.marker is None]
    return found


def dockerfile(plan: ImagePlan) -> str:
    """The Dockerfile: Debian packages, a virtualenv with omnienv and the author's code, the server."""
    sandbox = ' org.omnienv.sandbox="bubblewrap"' if plan.sandboxed else ""
    labels = f"LABEL org.omnienv.env={docker_quoted(plan.name)}{sandbox}"
    variables = "".join(f"ENV {key}={docker_quoted(value)}\n" for key, value in plan.variables)
    name = _one_line(plan.name)
    return f"""# Serves the omnienv environment '{name}' on every transport on one port ({PORT}, or $PORT).
# Made by `omnienv build`; sandboxed environments need the container options in docs/deploy.md.
{install_steps(plan)}COPY entrypoint.sh {ROOT}/entrypoint.sh
ENV PATH="{ROOT}/venv/bin:$PATH" HOST=0.0.0.0 PORT={PORT}
{variables}{labels}
EXPOSE {PORT}
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \\
    CMD ["python", "-c", "{HEALTH_PROBE}"]
ENTRYPOINT ["/bin/sh", "{ROOT}/entrypoint.sh"]
"""


def install_steps(plan: ImagePlan, *, packed: bool = False) -> str:
    """The Dockerfile's lines from ``FROM`` that install what ``plan`` needs, from the sources
    :func:`write_sources` wrote (``packed`` as it wrote them): the Debian packages (and Python where
    the base has none), a virtualenv at ``/opt/omnienv/venv`` with omnienv and its extras, the
    author's code at ``/opt/omnienv/app`` and its projects installed. No registry holds omnienv."""
    packages = " ".join(sorted(set(plan.system_packages)))
    for name in plan.system_packages:
        if not _PACKAGE_NAME.match(name):
            raise DeployError(f"'{name}' is not a Debian package name (system_packages of {plan.name})")
    if not plan.base or re.search(r"\s", plan.base) or _CONTROL.search(plan.base):
        raise DeployError(f"{plan.base!r} is not an image name: pass one such as {DEFAULT_BASE}")
    projects = "".join(" " + shlex.quote(f"{ROOT}/app/{p}") for p in plan.projects)  # RUN is a shell command
    extras = f"[{','.join(plan.extras)}]" if plan.extras else ""
    install_projects = f"RUN {ROOT}/venv/bin/pip install{projects}\n" if projects else ""
    ca = f"COPY build-ca.pem {ROOT}/build-ca.pem\nARG PIP_CERT={ROOT}/build-ca.pem\n" if plan.ca_cert else ""
    if packed:
        omnienv_source = f"ADD {PACKED[0]} {ROOT}/\n"
        app = f"ADD {PACKED[1]} {ROOT}/\n" if plan.app else ""
    else:
        omnienv_source, app = f"COPY omnienv-src {ROOT}/omnienv-src\n", f"COPY app {ROOT}/app\n"
    return f"""FROM {plan.base}
ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
RUN set -eu; packages="{packages}"; \\
    if ! python3 -c "import ensurepip, venv" 2>/dev/null; then packages="$packages python3 python3-venv"; fi; \\
    if [ -n "$packages" ]; then apt-get update; apt-get install -y --no-install-recommends $packages; \\
    rm -rf /var/lib/apt/lists/*; fi; \\
    python3 -m venv {ROOT}/venv
{ca}{omnienv_source}RUN {ROOT}/venv/bin/pip install "{ROOT}/omnienv-src{extras}"
{app}{install_projects}"""


def docker_quoted(value: str) -> str:
    """``value`` as one double-quoted Dockerfile word that stays literal: no variable is expanded
    in it (``LABEL`` and ``ENV`` expand ``$``) and no line break ends the instruction early."""
    if _CONTROL.search(value):
        raise DeployError(f"{value!r} holds a control character, which a Dockerfile cannot carry: remove it")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return f'"{escaped}"'


def _one_line(text: str) -> str:
    """``text`` fit for a comment line of the generated files: a line break would end the comment."""
    return _CONTROL.sub("?", text)


def _served(plan: ImagePlan) -> str:
    """What the entry command serves by default, as a shell word: a task folder is found beside the
    script (it travels with it), and every other character is quoted, never run."""
    prefix = f"{ROOT}/app/"
    if plan.env.startswith(prefix):
        return '"$here"/' + shlex.quote("app/" + plan.env.removeprefix(prefix))
    return shlex.quote(plan.env)


def entrypoint(plan: ImagePlan) -> str:
    """The entry command, a POSIX shell script: the image's CMD, and runnable from the folder itself."""
    return f"""#!/bin/sh
# Serves {_one_line(plan.name)} on $HOST:$PORT: every transport, and /health for the container's health check.
# Runs from this folder too: PYTHON=/path/to/python sh entrypoint.sh (omnienv's requirements installed).
# OMNIENV_ENV overrides what is served; OMNIENV_ALLOW_HOST lists the names clients reach it by (a
# Space's host), space-separated; options of `python -m omnienv.app` (--max-sessions N...) follow.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
served={_served(plan)}
export PYTHONPATH="$here/app:$here/omnienv-src${{PYTHONPATH:+:$PYTHONPATH}}"
set -- --host "${{HOST:-0.0.0.0}}" --port "${{PORT:-{PORT}}}" "$@"
for name in ${{OMNIENV_ALLOW_HOST:-}}; do set -- "$@" --allow-host "$name"; done
exec "${{PYTHON:-python3}}" -m omnienv.app "${{OMNIENV_ENV:-$served}}" "$@"
"""
