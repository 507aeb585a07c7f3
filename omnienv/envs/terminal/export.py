"""Any environment with tasks, written as Harbor task directories (``omnienv export harbor``).

Harbor tasks are already Harbor tasks: their directories are copied as they are. Every other
environment's task becomes a directory whose agent acts through a shell command,
``omnienv harbor act TOOL '{"arg": ...}'``, and whose verifier replays what it did:

- ``instruction.md``: the environment's prompt, then its tools as commands;
- ``task.toml``: the limits, and ``[metadata.omnienv]`` naming the environment, task and seed;
- ``environment/Dockerfile``: a slim Python image with omnienv installed;
- ``tests/test.sh``: ``omnienv harbor grade`` replays the calls the agent made into a fresh
  environment and writes the episode's reward to ``/logs/verifier/reward.json`` (a void episode
  writes none: Harbor then records an error, never a score);
- ``solution/solve.sh``: the environment's own scripted player, through the same command.

The replayed episode is the reward: a call log edited by hand is only a different set of calls.
Harbor puts the environment in the agent's container, so an exported game's rules (and its
answers) are on the agent's disk; for training against a hostile agent, serve the environment
itself. Reading an exported folder back (``omnienv serve DIR``) gives the original environment
over the exported tasks (:func:`exported_environment`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import omnienv
from omnienv.core import EnvironmentBase, OmniEnvError, Task, ToolSpec, as_sync, load_environment, registered
from omnienv.envs.terminal.env import Terminal
from omnienv.envs.terminal.harbor import HarborTaskError, read_toml
from omnienv.envs.terminal.workspace import copy_tree

__all__ = ["export_harbor", "exported_environment", "exported_identity", "spec_of"]

_INSTRUCTION = """{prompt}

## How to act

Each action is a shell command: `omnienv harbor act TOOL 'JSON arguments'` prints what the
environment answers. The episode ends when an action says so. Your tools:

{tools}
"""


def spec_of(env_class: type[EnvironmentBase]) -> str:
    """How the environment is loaded again: its registry name, else ``module:Class``."""
    if env_class.name in registered():
        with contextlib.suppress(OmniEnvError):
            if load_environment(env_class.name) is env_class:
                return env_class.name
    return f"{env_class.__module__}:{env_class.__qualname__}"


def export_harbor(env_class: type[EnvironmentBase], out: Path, splits: Sequence[str] | None = None) -> list[Path]:
    """Write the tasks of ``splits`` (default: all) under ``out``; returns the task directories."""
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
    policy = next(iter(env_class.policies), None)
    for split in chosen:
        for task in env_class.task_index().split(split):
            written.append(_write_task(env_class, spec, task, policy, out))
    return written


def _write_task(env_class: type[EnvironmentBase], spec: str, task: Task, policy: str | None, out: Path) -> Path:
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
    (target / "environment" / "Dockerfile").write_text(
        "FROM python:3.11-slim\n"
        f'RUN pip install --no-cache-dir "omnienv=={omnienv.__version__}"\n'
        "WORKDIR /app\n"
        f"ENV OMNIENV_HARBOR_ENV={json.dumps(spec)} OMNIENV_HARBOR_TASK={json.dumps(task.id)} "
        f"OMNIENV_HARBOR_SEED={seed}\n"
    )
    _script(target / "tests" / "test.sh", "omnienv harbor grade --out /logs/verifier/reward.json")
    if policy is not None:
        (target / "solution").mkdir(exist_ok=True)
        _script(target / "solution" / "solve.sh", f"omnienv harbor solve --policy {policy}")
    return target


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
