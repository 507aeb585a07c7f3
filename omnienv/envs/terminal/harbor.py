"""Harbor task directories, read: the instruction, the limits, the verifier, the oracle, and how to
build the agent's starting workspace without a container.

A task is a directory holding ``instruction.md``, ``task.toml``, ``environment/`` (a
``Dockerfile`` and its context), ``tests/`` (the verifier, ``test.sh``) and ``solution/``
(``solve.sh``, the oracle). A folder of them (searched to any depth) is a suite; its tasks may
share files through symbolic links that stay inside the folder (the shipped suite's verifier
library), which are followed when the files are handed to a sandbox or exported.

Container-free, the sandbox gives the task the host's read-only system, so only the part of a
Dockerfile that lays out files can be honoured: ``WORKDIR``, ``COPY``/``ADD`` from the build
context into the working directory, ``ENV`` and offline ``RUN`` steps (run in the sandbox at
setup, with no network). A ``RUN`` that only installs Debian packages (``apt-get update &&
apt-get install -y ...``) is met by the host when it has every one of them installed. ``FROM``
is read but not pulled; ``USER``, ``EXPOSE``, ``CMD``, ``ENTRYPOINT``, ``LABEL`` and the like
change nothing the agent sees. Anything that needs the image itself (a package the host lacks,
any other download, files outside the working directory, a ``docker-compose.yaml``) makes
:func:`read_task` refuse the task, naming the line; so does a ``tests/test.sh`` that downloads or
installs software (:mod:`omnienv.envs.terminal.offline`).
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from omnienv.envs.terminal.dockerfile import (
    DEFAULT_WORKDIR,
    BuildStep,
    HarborTaskError,
    inside,
    read_dockerfile,
    reserved_path,
)
from omnienv.envs.terminal.hazards import environment_hazards, verifier_hazards
from omnienv.envs.terminal.offline import script_needs

__all__ = ["BuildStep", "HarborTask", "HarborTaskError", "find_tasks", "read_task", "read_toml"]

logger = logging.getLogger("omnienv.terminal")

TASK_FILES = ("instruction.md", "task.toml")
"""Either marks a folder as a task (:func:`read_task` then says what else it lacks)."""


@dataclass(frozen=True, slots=True)
class HarborTask:
    """One task directory, read and checked; ``steps`` rebuild its starting workspace."""

    id: str
    path: Path
    root: Path
    """The folder the task was found in: links in its files may lead anywhere inside it."""
    instruction: str
    split: str
    metadata: Mapping[str, Any]
    workdir: str
    mount: str
    """The directory the sandbox mounts writable (the first WORKDIR); ``workdir`` lies inside it."""
    steps: tuple[BuildStep, ...]
    env: Mapping[str, str]
    verifier_timeout: float = 600.0
    agent_timeout: float = 1800.0
    build_timeout: float = 600.0
    cpus: float = 1.0
    memory_mb: int = 2048
    storage_mb: int = 1024
    base_image: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)
    verifier_env: Mapping[str, str] = field(default_factory=dict)
    """``[verifier] env``: variables ``test.sh`` runs with, over the Dockerfile's ``ENV``."""
    solution_env: Mapping[str, str] = field(default_factory=dict)
    """``[solution] env``: variables the oracle's ``solve.sh`` runs with."""
    hazards: tuple[str, ...] = ()
    """Lines of ``tests/test.sh`` that let the agent's files run in its grader (logged on reading)."""

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.path / "solution"

    @property
    def nests_its_grader(self) -> bool:
        """Whether ``tests/`` grades with the shipped graders' library, which runs the agent's code
        in sandboxes of its own inside the verifier's: only then may the verifier make them."""
        return (self.tests_dir / "verifylib.py").exists()


def read_task(path: Path, task_id: str | None = None, root: Path | None = None) -> HarborTask:
    """Read one task directory, or say exactly why it cannot run container-free.

    Whatever a malformed file raises is a :class:`HarborTaskError` naming the task: a suite keeps
    its other tasks, and a served folder never meets a traceback."""
    try:
        return _read_task(path.resolve(), task_id or path.resolve().name, root)
    except HarborTaskError:
        raise
    except (UnicodeDecodeError, ValueError, TypeError, AttributeError, RuntimeError, OSError) as exc:
        raise HarborTaskError(
            f"task '{task_id or path.name}' cannot be read ({type(exc).__name__}: {exc}): fix its files "
            "(task.toml tables and numbers, UTF-8 text, shell quoting in the Dockerfile, links that end)"
        ) from exc


def _read_task(path: Path, name: str, root: Path | None) -> HarborTask:
    multi = _multi_step_root(path)
    if multi is not None:
        raise HarborTaskError(
            f"task '{multi.name}' is a multi-step Harbor task (its task.toml declares [[steps]]): "
            "omnienv runs single-step tasks; give each step a task directory of its own"
        )
    for required in ("instruction.md", "tests/test.sh"):
        if not (path / required).is_file():
            raise HarborTaskError(f"{path} is not a Harbor task: it has no {required}")
    _check_links(path, name, (root or path).resolve())
    config = read_toml(path / "task.toml")
    if (path / "environment" / "docker-compose.yaml").exists() or (
        path / "environment" / "docker-compose.yml"
    ).exists():
        raise HarborTaskError(f"task '{name}' needs a container: its environment is a docker-compose project")
    dockerfile = path / "environment" / "Dockerfile"
    environment = _table(config, "environment", name)
    image = environment.get("docker_image")
    if image and not dockerfile.is_file():  # with its Dockerfile, the image is read from that, as built
        raise HarborTaskError(
            f"task '{name}' needs a container: its starting state is the image {image!r:.80} "
            "([environment] docker_image), and it has no environment/Dockerfile to lay that state out from"
        )
    base, workdirs, steps, env = read_dockerfile(dockerfile, name) if dockerfile.is_file() else ("", [], [], {})
    mount = workdirs[0] if workdirs else DEFAULT_WORKDIR
    verifier = (path / "tests" / "test.sh").read_text(errors="replace")
    needs = script_needs(verifier)
    if needs:
        number, line, why = needs[0]
        raise HarborTaskError(
            f"task '{name}' needs a container: tests/test.sh line {number} ({line[:80]}) {why}; "
            "its verifier runs container-free, on the host's read-only system with no network"
        )
    metadata = _table(config, "metadata", name)
    workdir = workdirs[-1] if workdirs else DEFAULT_WORKDIR
    named = environment.get("workdir")  # [environment] workdir: where the agent and the verifier start
    if isinstance(named, str) and named.strip():
        workdir = posixpath.normpath(PurePosixPath("/") / named.strip())
        if not workdirs and not steps:  # nothing laid out yet: the named directory is the one mounted
            mount = workdir
            if reserved := reserved_path(workdir):
                raise HarborTaskError(
                    f"task '{name}' needs a container: task.toml's [environment] workdir {workdir} is in or over "
                    f"{reserved}, where the sandbox mounts the host's system, its home or the verifier's files"
                )
        elif not inside(workdir, mount):
            raise HarborTaskError(
                f"task '{name}' needs a container: task.toml's [environment] workdir {workdir} is outside the "
                f"working directory {mount}, the only place the sandbox makes writable"
            )
    memory = _number(environment, "memory_mb", _megabytes(environment, "memory", 2048, name), name, least=1)
    storage = _number(environment, "storage_mb", _megabytes(environment, "storage", 1024, name), name, least=1)
    verifier_env = _table_env(config, "verifier", name)
    solution_env = _table_env(config, "solution", name)
    for key, value in env.items():  # a variable no process can be given failed every episode, as the host's fault
        if "=" in key or not key:
            raise HarborTaskError(f"task '{name}': the Dockerfile's ENV sets {key!r:.40} to {value!r:.40}, no variable")
    return HarborTask(
        id=name,
        path=path,
        root=root or path,
        instruction=(path / "instruction.md").read_text(encoding="utf-8"),
        split=str(metadata.get("split") or "test"),
        metadata=metadata,
        workdir=workdir,
        mount=mount,
        steps=tuple(steps),
        env=env,
        verifier_env=verifier_env,
        solution_env=solution_env,
        verifier_timeout=_number(_table(config, "verifier", name), "timeout_sec", 600.0, name),
        agent_timeout=_number(_table(config, "agent", name), "timeout_sec", 1800.0, name),
        build_timeout=_number(environment, "build_timeout_sec", 600.0, name),
        cpus=_number(environment, "cpus", 1.0, name),
        memory_mb=int(memory),
        storage_mb=int(storage),
        base_image=base,
        config=config,
        hazards=(*verifier_hazards(verifier), *environment_hazards({**env, **verifier_env}, mount)),
    )


@cache
def find_tasks(root: Path) -> tuple[HarborTask, ...]:
    """Every runnable task under ``root`` (itself a task, or a folder of them), ids by relative path.

    A suite keeps the tasks that run here and logs the others with their reasons; a single task
    that cannot run raises, and so does a folder where none can, with every task's reason.
    """
    root = root.resolve()
    found, refused = [], []
    if any((root / mark).is_file() for mark in TASK_FILES) or _multi_step_root(root) is not None:
        found.append(read_task(root))
    else:
        multi_step: set[Path] = set()
        for task_dir in _task_dirs(root):
            try:
                multi = _multi_step_root(task_dir)
                if multi is not None:
                    if multi in multi_step:
                        continue  # another step of a task refused already
                    multi_step.add(multi)
                found.append(read_task(task_dir, task_dir.relative_to(root).as_posix(), root))
            except HarborTaskError as exc:
                refused.append(exc.message)
    hazards = [f"'{task.id}': {hazard}" for task in found for hazard in task.hazards]
    if hazards:
        logger.warning(
            "%d line(s) of Harbor verifiers under %s let the agent's files into the grader:\n  %s",
            len(hazards), root, "\n  ".join(hazards),
        )  # fmt: skip
    if not found:
        detail = "\n  ".join(refused) or f"no folder in it holds a task's {' or '.join(TASK_FILES)}"
        raise HarborTaskError(f"no runnable Harbor task under {root}:\n  {detail}")
    if refused:
        logger.warning("%d Harbor task(s) under %s cannot run here:\n  %s", len(refused), root, "\n  ".join(refused))
    return tuple(found)


def _task_dirs(root: Path) -> list[Path]:
    """The folders under ``root`` that hold one of a task's files: one that lacks the others is
    refused, saying which, rather than passed over in silence."""
    return sorted({found.parent for mark in TASK_FILES for found in root.rglob(mark)})


def _multi_step_root(path: Path) -> Path | None:
    """The multi-step task ``path`` is, or is a step of (``<task>/steps/<step>/``); None otherwise.

    Such a task keeps ``instruction.md`` and ``tests/`` per step, under a ``task.toml`` that lists
    the steps, and runs them one after another in one environment.
    """
    for candidate in (path, path.parent.parent if path.parent.name == "steps" else None):
        if candidate is not None and isinstance(read_toml(candidate / "task.toml").get("steps"), list):
            return candidate
    return None


def _check_links(path: Path, name: str, root: Path) -> None:
    """Links in a task's files may lead only inside the folder it was loaded from: they are
    followed when the files go to a sandbox, and no task may hand it a file of the host's. A link
    to a directory elsewhere in the folder is checked through: the links in that directory too."""
    pending, seen = [path], {path}
    while pending:
        for folder, directories, files in os.walk(pending.pop()):
            for entry in sorted([*directories, *files]):
                link = Path(folder, entry)
                if not link.is_symlink():
                    continue
                shown = link.relative_to(root) if link.is_relative_to(root) else link
                try:
                    target = link.resolve()
                except (OSError, RuntimeError) as exc:  # a loop
                    raise HarborTaskError(f"task '{name}': {shown} is a link that never ends ({exc})") from exc
                if not target.is_relative_to(root):
                    raise HarborTaskError(
                        f"task '{name}': {shown} links to {target}, outside {root}; load the folder that "
                        "holds both (for a task of a suite that shares files, the suite's folder)"
                    )
                if target.is_dir() and target not in seen:
                    seen.add(target)
                    pending.append(target)


# -- task.toml and the Dockerfile ----------------------------------------------------------------


def _table(config: Mapping[str, Any], table: str, name: str) -> dict[str, Any]:
    """``[table]`` of task.toml (empty when absent), refused when it is no table."""
    value = config.get(table, {})
    if not isinstance(value, dict):
        raise HarborTaskError(f"task '{name}': task.toml's {table} must be a table ([{table}]), not {value!r:.60}")
    return dict(value)


_LARGEST = 1e9
"""Above any limit a task means (31 years, a petabyte, a billion CPUs), and below what the kernel's
limits hold: ``timeout_sec = 1e300`` made every reset fail at ``prlimit``, as the host's fault."""


def _number(table: Mapping[str, Any], key: str, default: float, name: str, least: float = 0.0) -> float:
    """A positive number of task.toml (``default`` when absent), refused when it is anything else:
    not over :data:`_LARGEST`, and at least ``least`` (a memory of ``0.5`` megabytes is none)."""
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not (0 < value <= _LARGEST and value >= least):
        raise HarborTaskError(
            f"task '{name}': task.toml's {key} must be a positive number"
            f"{f' of at least {least:g}' if least else ''}, at most {_LARGEST:g}, not {value!r:.60}"
        )
    return float(value)


def _table_env(config: Mapping[str, Any], table: str, name: str) -> dict[str, str]:
    """``[table] env`` of task.toml: literal values only, as the sandbox passes on no host variable."""
    env = _table(config, table, name).get("env") or {}
    if not isinstance(env, dict):
        raise HarborTaskError(f"task '{name}': [{table}] env must be a table of NAME = \"value\"")
    for key, value in env.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(key)):
            raise HarborTaskError(f"task '{name}': [{table}] env has {key!r}, which is no variable name")
        if isinstance(value, str) and re.search(r"\$\{?[A-Za-z_]", value):
            raise HarborTaskError(
                f"task '{name}' needs a container: [{table}] env {key} = {value!r} reads a variable of the "
                "host, and container-free sandboxes are given none: write the value itself"
            )
    return {str(key): value if isinstance(value, str) else json.dumps(value) for key, value in env.items()}


def read_toml(path: Path) -> dict[str, Any]:
    """A task's ``task.toml`` (empty when there is none), or a :class:`HarborTaskError` naming it."""
    if not path.is_file():
        return {}
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HarborTaskError(f"{path} is not valid TOML in UTF-8: {exc}") from exc
    if _holds_nul(config):
        raise HarborTaskError(f"{path} holds a NUL character (\\u0000), which no path, command or variable can")
    return config


def _holds_nul(value: Any) -> bool:
    """Whether a NUL is in any string of ``value``: every process given one (a workdir, an env value)
    failed to start, and every episode with it, as the host's fault."""
    if isinstance(value, str):
        return "\0" in value
    if isinstance(value, dict):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    return isinstance(value, list) and any(_holds_nul(item) for item in value)


def _megabytes(table: Mapping[str, Any], key: str, default: int, name: str) -> float:
    """``"2G"``, ``"512M"``, ``"1024"`` (MB) of ``[environment] key`` as megabytes (``default`` when absent);
    anything else is refused, never read as the default."""
    value = table.get(key)
    if value is None:
        return default
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", str(value), re.I)
    if isinstance(value, bool) or not found:
        raise HarborTaskError(
            f'task \'{name}\': task.toml\'s {key} must be a size such as "2G" or "512M", not {value!r:.60}'
        )
    scale = {"": 1, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[found.group(2).lower()]
    return float(found.group(1)) * scale
