"""Any environment with tasks, written as Harbor task directories (``omnienv export harbor``).

Harbor tasks are already Harbor tasks: their directories are copied as they are. Every other
environment's task becomes a directory whose agent acts through a shell command,
``omnienv harbor act TOOL '{"arg": ...}'``, and whose verifier replays what it did:

- ``instruction.md``: the environment's prompt, then its tools as commands;
- ``task.toml``: the limits, and ``[metadata.omnienv]`` naming the environment, task and seed;
- ``environment/``: the image's build context, as ``omnienv build`` writes it
  (:mod:`omnienv.deploy.context`): the environment's Debian packages, a virtualenv with omnienv and
  the extras the environment needs, from omnienv's own source (an archive in the context: no
  registry needs to hold omnienv), and the author's code for ``package.module:Class``;
- ``tests/test.sh``: ``omnienv harbor grade`` replays the calls the agent made into a fresh
  environment and writes the episode's reward to ``/logs/verifier/reward.json`` (a void episode
  writes none: Harbor then records an error, never a score);
- ``solution/solve.sh``: the environment's own scripted player, through the same command.

The replayed episode is the reward: a call log edited by hand is only a different set of calls.
Harbor puts the environment in the agent's container, so an exported game's rules (and its
answers) are on the agent's disk; for training against a hostile agent, serve the environment
itself. Reading an exported folder back (``omnienv serve DIR``) gives the original environment
over the exported tasks (:func:`exported_environment`).

Environments that run the agent's code in bubblewrap (Jupyter, the desktop) are refused
(:class:`HarborExportError`): bubblewrap needs two container options (docs/deploy.md) that Harbor's
container is not started with, and omnienv never runs the agent's code unsandboxed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import omnienv
from omnienv.core import EnvironmentBase, OmniEnvError, Task, ToolSpec, as_sync, load_environment, registered
from omnienv.envs.terminal.env import Terminal
from omnienv.envs.terminal.harbor import HarborTaskError, read_toml
from omnienv.envs.terminal.workspace import copy_tree

if TYPE_CHECKING:
    from omnienv.deploy.context import ImagePlan

__all__ = ["HarborExportError", "export_harbor", "exported_environment", "exported_identity", "spec_of"]

_INSTRUCTION = """{prompt}

## How to act

Each action is a shell command: `omnienv harbor act TOOL 'JSON arguments'` prints what the
environment answers. The episode ends when an action says so. Your tools:

{tools}
"""


class HarborExportError(OmniEnvError):
    """The environment's tasks cannot be written as Harbor tasks; the message says why and what to do."""

    code = "HARBOR_EXPORT_ERROR"


def spec_of(env_class: type[EnvironmentBase]) -> str:
    """How the environment is loaded again: its registry name, its catalog name, else ``module:Class``."""
    entry = getattr(env_class, "entry", None)
    for name in (env_class.name if env_class.name in registered() else None, getattr(entry, "name", None)):
        if isinstance(name, str):
            with contextlib.suppress(OmniEnvError):
                if load_environment(name) is env_class:
                    return name
    return f"{env_class.__module__}:{env_class.__qualname__}"


def export_harbor(
    env_class: type[EnvironmentBase],
    out: Path,
    splits: Sequence[str] | None = None,
    *,
    base: str | None = None,
    ca_cert: Path | None = None,
) -> list[Path]:
    """Write the tasks of ``splits`` (default: all) under ``out``; returns the task directories.

    ``base`` (default ``python:3.11-slim``) and ``ca_cert`` are those of ``omnienv build``
    (:func:`omnienv.deploy.plan_image`): every task's image is built from ``base``. Raises
    :class:`HarborExportError` for an environment that sandboxes the agent's code in bubblewrap."""
    chosen = tuple(splits or env_class.splits)
    written: list[Path] = []
    if issubclass(env_class, Terminal):
        for harbor in env_class.harbor_tasks().values():
            if harbor.split in chosen:
                target = out / harbor.id
                copy_tree(harbor.path, target, follow_within=harbor.root)  # no link leads out of the suite
                written.append(target)
        return written
    spec = spec_of(env_class)
    plan = _image_plan(env_class, spec, base, ca_cert)
    policy = next(iter(env_class.policies), None)
    sources: list[Path] = []  # the first task's build sources; every other task's are links to them
    for split in chosen:
        for task in env_class.task_index().split(split):
            written.append(_write_task(env_class, spec, task, policy, out, plan, sources))
    return written


def _image_plan(env_class: type[EnvironmentBase], spec: str, base: str | None, ca_cert: Path | None) -> ImagePlan:
    """The image plan of ``omnienv build`` for the tasks' image, less the server: the commands in
    a task run the environment in their own process. Refuses a sandboxed environment."""
    try:
        import packaging.requirements  # noqa: F401  (the deploy extra's: omnienv's requirements for the image)

        from omnienv.deploy.context import DEFAULT_BASE, plan_image
    except ImportError as exc:
        raise HarborExportError(
            f"exporting to Harbor writes each task's image context, which needs the deploy extra: "
            f"pip install 'omnienv[server,deploy]' ({exc})"
        ) from None
    plan = plan_image(spec, base=base or DEFAULT_BASE, ca_cert=ca_cert)
    if plan.sandboxed:
        raise HarborExportError(
            f"{env_class.name} runs the agent's code in a bubblewrap sandbox, which needs container options "
            "that Harbor does not start its task containers with (--security-opt seccomp=unconfined and "
            "systempaths=unconfined, docs/deploy.md), and omnienv never runs the agent's code unsandboxed: "
            f"its tasks cannot be exported to Harbor. Serve it instead (omnienv serve {spec}), or build its "
            f"image (omnienv build {spec}) and run that with those two options (omnienv serve --image TAG)"
        )
    return dataclasses.replace(plan, extras=tuple(sorted(set(env_class.extras))))


def _write_task(
    env_class: type[EnvironmentBase],
    spec: str,
    task: Task,
    policy: str | None,
    out: Path,
    plan: ImagePlan,
    sources: list[Path],
) -> Path:
    from omnienv.deploy.context import ROOT, docker_quoted, install_steps

    if any(ord(character) < 32 or ord(character) == 127 for character in task.id):
        raise HarborTaskError(f"task id {task.id!r} holds control characters: it cannot name a Harbor task")
    target = out / _folder_name(task.id)
    (target / "environment").mkdir(parents=True, exist_ok=True)
    (target / "tests").mkdir(exist_ok=True)
    seed = 0
    prompt = _prompt(env_class, task, seed)
    tools = "\n".join(_tool_help(tool) for tool in env_class.tools.values())
    (target / "instruction.md").write_text(_INSTRUCTION.format(prompt=prompt, tools=tools))
    identity = {"env": spec, "task": task.id, "seed": seed, "version": omnienv.__version__}
    (target / "task.toml").write_text(
        "\n".join(
            [
                'version = "1.0"',
                "",
                "[metadata]",
                'author_name = "omnienv export"',
                f"category = {json.dumps(env_class.name)}",
                f"split = {json.dumps(task.split)}",
                f"tags = {json.dumps(['omnienv', env_class.name])}",
                "",
                "[metadata.omnienv]",
                *(f"{key} = {json.dumps(value)}" for key, value in identity.items()),
                "",
                "[verifier]",
                "timeout_sec = 600.0",
                "",
                "[agent]",
                "timeout_sec = 1800.0",
                "",
                "[environment]",
                "build_timeout_sec = 600.0",
                "cpus = 1",
                "memory_mb = 2048",
                "storage_mb = 2048",
                "allow_internet = false",
                "",
            ]
        )
    )
    _write_sources(plan, target / "environment", out, sources)
    loose = any(inside not in plan.projects for _, inside in plan.app)  # code imported from app/, not installed
    importable = f'ENV PYTHONPATH="{ROOT}/app"\n' if loose else ""
    (target / "environment" / "Dockerfile").write_text(
        f"# The omnienv environment {json.dumps(env_class.name)} for one task: `omnienv harbor act|grade|solve`.\n"
        "# Written by `omnienv export harbor`: omnienv and its needs come from this folder, no registry.\n"
        f"{install_steps(plan, packed=True)}"
        f'ENV PATH="{ROOT}/venv/bin:$PATH"\n{importable}'
        "WORKDIR /app\n"
        f"ENV OMNIENV_HARBOR_ENV={docker_quoted(spec)} OMNIENV_HARBOR_TASK={docker_quoted(task.id)} "
        f"OMNIENV_HARBOR_SEED={seed}\n"
    )
    _script(target / "tests" / "test.sh", "omnienv harbor grade --out /logs/verifier/reward.json")
    if policy is not None:
        (target / "solution").mkdir(exist_ok=True)
        _script(target / "solution" / "solve.sh", f"omnienv harbor solve --policy {policy}")
    return target


def _write_sources(plan: ImagePlan, context: Path, out: Path, sources: list[Path]) -> None:
    """The build sources of ``plan`` in ``context``: written for the first task (into ``sources``),
    hard links to those for the others (copies where links cannot be made): a thousand tasks hold
    one copy of omnienv on disk."""
    from omnienv.deploy.context import PACKED, write_sources

    for name in (*PACKED, "build-ca.pem"):  # what an earlier export of this task left
        with contextlib.suppress(FileNotFoundError):
            (context / name).unlink()
    if not sources:
        sources.extend(write_sources(plan, context, packed=True, skip=out))
        return
    for source in sources:
        try:
            os.link(source, context / source.name)
        except OSError:  # another file system, or one without links
            shutil.copy2(source, context / source.name)


def _folder_name(task_id: str) -> str:
    """A task's folder: its id with ``/`` as ``-``, or, for an id that is no plain file name (any
    environment's ids are exported, an imported server's too), a safe name made unique by a hash."""
    name = task_id.replace("/", "-")
    if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", name):
        return name
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{re.sub(r'[^A-Za-z0-9._-]+', '-', name).strip('.-')[:80] or 'task'}-{digest}"


_PLACEHOLDERS = {"string": "...", "integer": 0, "number": 0.0, "boolean": False, "array": [], "object": {}}


def _tool_help(tool: ToolSpec) -> str:
    """A tool as a command: what it does, an example call, and its arguments' JSON Schema."""
    properties = tool.parameters.get("properties", {})
    example = {
        name: _PLACEHOLDERS.get(str(schema.get("type")), "...")
        for name, schema in properties.items()
        if name in tool.parameters.get("required", ())
    }
    summary = tool.description.splitlines()[0] if tool.description else ""
    return (
        f"- `{tool.name}`: {summary}\n  `omnienv harbor act {tool.name} '{json.dumps(example)}'`\n"
        f"  arguments (JSON Schema): `{json.dumps(tool.parameters, sort_keys=True)}`"
    )


def _prompt(env_class: type[EnvironmentBase], task: Task, seed: int) -> str:
    """The first observation's text: previewed where the environment can, else from a real reset."""
    env = env_class()
    preview = env.preview(task, seed=seed)
    if preview is not None:
        return preview.text
    player = as_sync(env)
    try:
        return player.reset(task=task, seed=seed).text
    finally:
        player.close()


def _script(path: Path, command: str) -> None:
    path.write_text(f"#!/bin/bash\n{command}\n")
    path.chmod(0o755)


def exported_identity(task_dir: Path) -> dict[str, Any] | None:
    """The ``[metadata.omnienv]`` of a task this module wrote, or None for any other task."""
    toml = task_dir / "task.toml"
    if not toml.is_file():
        return None
    try:
        metadata = read_toml(toml).get("metadata")
    except HarborTaskError:
        return None  # read as a plain task, it is refused alone, naming its file
    found = metadata.get("omnienv") if isinstance(metadata, dict) else None
    return dict(found) if isinstance(found, dict) and {"env", "task"} <= set(found) else None


def exported_environment(root: Path) -> type[EnvironmentBase] | None:
    """The original environment over the exported tasks under ``root``, or None when ``root``
    holds no exported task (then it is a plain Harbor suite)."""
    dirs = [root] if (root / "task.toml").is_file() else sorted(p.parent for p in root.rglob("task.toml"))
    identities = [identity for identity in map(exported_identity, dirs) if identity is not None]
    if not identities:
        return None
    if len(identities) != len(dirs) or len({identity["env"] for identity in identities}) != 1:
        raise HarborTaskError(f"{root} mixes tasks exported from omnienv environments with others; read them apart")
    name = identities[0]["env"]
    if not isinstance(name, str) or name not in registered():
        raise HarborTaskError(
            f"the tasks under {root} name the environment {name!r}, which is not a registered one: reading a Harbor "
            "folder runs no code that the folder names. Load that environment yourself (omnienv serve "
            "package.module:Class, or register it) if you trust it"
        )
    original = load_environment(name)
    chosen = {identity["task"] for identity in identities}
    by_split: dict[str, tuple[Task, ...]] = {
        split: tuple(t for t in original.task_index().split(split) if t.id in chosen) for split in original.splits
    }
    splits = tuple(split for split, tasks in by_split.items() if tasks)

    def tasks(cls: type[EnvironmentBase], split: str) -> tuple[Task, ...]:
        return by_split.get(split, ())

    attributes = {"splits": splits, "tasks": classmethod(tasks), "__module__": original.__module__}
    return type(original.__name__, (original,), attributes)
