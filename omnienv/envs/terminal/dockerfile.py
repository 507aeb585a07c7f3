"""A Harbor task's Dockerfile, read container-free: the working directory, the files laid out in it,
the offline ``RUN`` steps and the environment (see :mod:`omnienv.envs.terminal.harbor`), and where a
workspace may lie without hiding the host's system, the sandbox's home or the verifier's files.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from omnienv.core import EnvironmentDefinitionError
from omnienv.envs.terminal.offline import host_has_package, installs_over_network, system_packages
from omnienv.sandboxes.bubblewrap import HOME, SYSTEM_PATHS

__all__ = [
    "DEFAULT_WORKDIR",
    "IMAGE_PATH",
    "LOGS_MOUNT",
    "TESTS_MOUNT",
    "TOOLS_MOUNT",
    "BuildStep",
    "HarborTaskError",
    "inside",
    "read_dockerfile",
    "reserved_path",
]

DEFAULT_WORKDIR = "/app"
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The ``PATH`` of a Debian or Ubuntu image, and of the sandbox: what ``ENV PATH=/x:$PATH`` extends."""
TESTS_MOUNT, LOGS_MOUNT, TOOLS_MOUNT = "/tests", "/logs/verifier", "/opt/omnienv/bin"
"""Where the verifier mounts the task's tests, the directory its reward is read from, and its tools."""
VERIFIER_PATHS = (TESTS_MOUNT, "/logs", "/opt/omnienv")
_IGNORED = {
    "USER",
    "EXPOSE",
    "CMD",
    "ENTRYPOINT",
    "LABEL",
    "MAINTAINER",
    "HEALTHCHECK",
    "STOPSIGNAL",
    "SHELL",
    "VOLUME",
}
_FLAG = re.compile(r"^--[a-z-]+(=\S*)?$")


class HarborTaskError(EnvironmentDefinitionError):
    """A Harbor task that cannot be read, or cannot run here; the message names the fix."""


@dataclass(frozen=True, slots=True)
class BuildStep:
    """One step of the workspace build: copy ``source`` (in the context) to ``target``, or run ``command``."""

    kind: str  # "copy" or "run"
    target: str = ""  # absolute path inside the sandbox (copy)
    source: str = ""  # path in environment/ (copy)
    command: str = ""  # shell command (run)
    cwd: str = DEFAULT_WORKDIR
    env: tuple[tuple[str, str], ...] = ()


def _instructions(text: str) -> list[tuple[int, str, str]]:
    """(line number, INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    found: list[tuple[int, str, str]] = []
    current, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue
        if not current:
            start = number
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        keyword, _, arguments = current.partition(" ")
        found.append((start, keyword.upper(), arguments.strip()))
        current = ""
    if current:
        keyword, _, arguments = current.partition(" ")
        found.append((start, keyword.upper(), arguments.strip()))
    return found


def _words(arguments: str) -> list[str]:
    if arguments.startswith("["):
        try:
            return [str(word) for word in json.loads(arguments)]
        except json.JSONDecodeError:
            pass
    return shlex.split(arguments)


def read_dockerfile(path: Path, name: str) -> tuple[str, list[str], list[BuildStep], dict[str, str]]:
    base = ""
    workdirs: list[str] = []
    steps: list[BuildStep] = []
    env: dict[str, str] = {}
    args: dict[str, str] = {}
    cwd = DEFAULT_WORKDIR

    def refuse(number: int, line: str, why: str) -> HarborTaskError:
        return HarborTaskError(
            f"task '{name}' needs a container: {path.name} line {number} ({line[:80]}) {why}; "
            "container-free runs use the host's read-only system and no network"
        )

    text = path.read_text(encoding="utf-8")
    if "\0" in text:  # no path, command or variable can hold one: every episode would fail, as the host's fault
        raise HarborTaskError(f"task '{name}': its {path.name} holds a NUL byte")
    for number, keyword, arguments in _instructions(text):
        line = f"{keyword} {arguments}"
        arguments = re.sub(r"\$\{?(\w+)\}?", lambda m: _variable(m.group(1), args, env, m.group(0)), arguments)
        if keyword == "FROM":
            base = arguments.split()[0] if arguments else ""
        elif keyword == "ARG":
            key, _, value = arguments.partition("=")
            args[key.strip()] = value.strip().strip('"')
        elif keyword == "WORKDIR":
            cwd = posixpath.normpath(PurePosixPath(cwd) / arguments.strip().strip('"'))
            if workdirs and not inside(cwd, workdirs[0]):
                raise refuse(number, line, f"moves outside the working directory {workdirs[0]}")
            if not workdirs and (reserved := reserved_path(cwd)):
                raise refuse(
                    number,
                    line,
                    f"works in or over {reserved}, where the sandbox mounts the host's system, its home or the "
                    "verifier's files",
                )
            workdirs.append(cwd)
        elif keyword == "ENV":
            env.update(_env_pairs(arguments))
        elif keyword in ("COPY", "ADD"):
            words = [word for word in _words(arguments) if not _FLAG.match(word)]
            if any(word.startswith("--from") for word in _words(arguments)) or len(words) < 2:
                raise refuse(number, line, "copies from another image")
            if keyword == "ADD" and any(re.match(r"https?://", word) for word in words):
                raise refuse(number, line, "downloads a file")
            *sources, target = words
            target = posixpath.normpath(PurePosixPath(cwd) / target) + ("/" if target.endswith("/") else "")
            mount = workdirs[0] if workdirs else DEFAULT_WORKDIR
            if not inside(target.rstrip("/") or "/", mount):
                raise refuse(number, line, f"writes outside the working directory {mount}")
            for source in sources:
                if PurePosixPath(source).is_absolute() or ".." in PurePosixPath(source).parts:
                    raise refuse(number, line, "copies from outside its build context")
                if not (path.parent / source).exists():
                    raise HarborTaskError(
                        f"task '{name}': {path.name} line {number} copies '{source}', which is not in environment/"
                    )
                steps.append(BuildStep("copy", target=target, source=source, cwd=cwd))
        elif keyword == "RUN":
            command = " ".join(_words(arguments)) if arguments.startswith("[") else arguments
            packages = system_packages(command)
            if packages is not None:  # the image installs system packages: the host may have them all
                missing = [package for package in packages if not host_has_package(package)]
                if missing:
                    raise refuse(number, line, f"installs packages this host lacks ({', '.join(missing)})")
                continue
            if installs_over_network(command):
                raise refuse(number, line, "installs software over the network")
            steps.append(BuildStep("run", command=command, cwd=cwd, env=tuple(env.items())))
        elif keyword not in _IGNORED and keyword != "ONBUILD":
            raise refuse(number, line, f"uses {keyword}, which only an image build can honour")
    return base, workdirs, steps, env


def _variable(name: str, args: Mapping[str, str], env: Mapping[str, str], unknown: str) -> str:
    """``$name`` in a Dockerfile line: an ``ARG``, an ``ENV``, the image's ``PATH``, or left as written."""
    return args.get(name, env.get(name, IMAGE_PATH if name == "PATH" else unknown))


def _env_pairs(arguments: str) -> dict[str, str]:
    words = shlex.split(arguments)
    if words and "=" not in words[0]:  # the legacy form: ENV KEY value with spaces
        return {words[0]: arguments.split(None, 1)[1].strip() if len(words) > 1 else ""}
    return dict(word.split("=", 1) for word in words if "=" in word)


def reserved_path(mount: str) -> str | None:
    """The system directory (or the verifier's, or the sandbox's home) that a writable workspace at
    ``mount`` would hide or lie in. The workspace is mounted over the verifier's files: at ``/opt``
    it would hide the verifier's tools, and the agent's own ``bash`` would grade it."""
    if mount == "/":
        return "/"
    if inside(HOME, mount) and mount != HOME:  # over the home: no shell could start in it (/home)
        return HOME
    paths = (*SYSTEM_PATHS, *VERIFIER_PATHS)
    return next((path for path in paths if inside(mount, path) or inside(path, mount)), None)


def inside(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies under it, ``..`` resolved (``/app/../etc`` is not in ``/app``)."""
    path, root = posixpath.normpath(path), posixpath.normpath(root)
    return PurePosixPath(path) == PurePosixPath(root) or PurePosixPath(root) in PurePosixPath(path).parents
