"""The agent's workspace: built from a task's steps in its sandbox, and copied out for the verifier.

The copy is made by the host after the agent's processes are dead, and it takes only directories,
regular files and symbolic links (as links, never followed): a FIFO or device the agent left
cannot block it, and a link to ``/etc/shadow`` is a dangling link in the verifier's sandbox.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from omnienv.envs.terminal.harbor import HarborTask
from omnienv.sandboxes.sandbox import Sandbox

__all__ = [
    "SANDBOX_ENV",
    "build_workspace",
    "copy_tree",
    "env_for",
    "read_plain_file",
    "workspace_binds",
    "workspace_dir",
]

logger = logging.getLogger("omnienv.terminal")

SANDBOX_ENV = {
    "HOME": "/home/user",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
}
"""The whole environment of every process a terminal task starts (plus the task's ``ENV``)."""

_GITCONFIG = (
    b"[user]\n\tname = Agent\n\temail = agent@example.com\n[init]\n\tdefaultBranch = main\n[safe]\n\tdirectory = *\n"
)


def workspace_dir(sandbox: Sandbox) -> Path:
    """The workspace's host directory. It lives outside the agent's home, where nothing the agent
    runs can rename it or put a link to a host directory in its place: every shell restart mounts
    it again, and the verifier copies it."""
    return sandbox.private_dir / "workspace"


def workspace_binds(sandbox: Sandbox, task: HarborTask) -> list[tuple[str, str]]:
    """The workspace's host directory, mounted at the task's working directory."""
    return [(str(workspace_dir(sandbox)), task.mount)]


def build_workspace(sandbox: Sandbox, task: HarborTask) -> None:
    """Lay out the starting state: the task's copies, then its offline RUN steps, in order."""
    workspace = workspace_dir(sandbox)
    workspace.mkdir(exist_ok=True)
    sandbox.write_work_file(".gitconfig", _GITCONFIG)
    for directory in {task.workdir, *(step.cwd for step in task.steps)}:
        (workspace / _relative(directory, task.mount)).mkdir(parents=True, exist_ok=True)
    binds = workspace_binds(sandbox, task)
    for step in task.steps:
        if step.kind == "copy":
            _copy_in(task.path / "environment" / step.source, workspace, step.target, task.mount)
            continue
        script = f"cd {shlex.quote(step.cwd)} && {step.command}"
        with tempfile.TemporaryFile() as log:
            process = sandbox.spawn(
                ["bash", "-c", script], env={**SANDBOX_ENV, **dict(step.env)}, binds=binds, stdout=log, stderr=log
            )
            try:
                code = process.wait(timeout=task.build_timeout)
            except subprocess.TimeoutExpired:
                sandbox.kill()
                raise RuntimeError(
                    f"task '{task.id}': a RUN step took over {task.build_timeout:g} s: {step.command[:100]}"
                ) from None
            if code != 0:
                log.seek(0)
                tail = log.read()[-1500:].decode("utf-8", "replace")
                raise RuntimeError(f"task '{task.id}': RUN {step.command[:100]} exited with {code}:\n{tail}")


def copy_tree(source: Path, target: Path, *, follow_within: Path | None = None) -> None:
    """Copy ``source``'s contents into ``target``: directories, regular files and links only.

    Links are copied as links, except those that lead to a file or directory inside
    ``follow_within``, whose target is copied in their place (once along any one path, so a link
    to its own parent ends). The walk keeps its own stack: an agent's directories nested a
    thousand deep are copied, not a ``RecursionError`` that would void the episode.
    """
    within = follow_within.resolve() if follow_within is not None else None
    target.mkdir(parents=True, exist_ok=True)
    pending: list[tuple[str, Path, frozenset[Path]]] = [(str(source), target, frozenset())]
    made: list[tuple[str, Path]] = []  # directories copied, parents first: their times are set last
    first = True
    while pending:
        directory, copy, followed = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            if first:
                raise
            logger.warning("workspace copy skipped %s: %s", directory, exc)
            continue
        first = False
        for entry in entries:
            destination = copy / entry.name
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
                entry_path, into = entry.path, followed
                if stat.S_ISLNK(mode) and within is not None:
                    resolved = Path(entry.path).resolve()
                    if resolved.is_relative_to(within) and resolved not in followed:
                        mode, entry_path, into = resolved.stat().st_mode, str(resolved), followed | {resolved}
                if stat.S_ISLNK(mode):
                    os.symlink(os.readlink(entry.path), destination)
                elif stat.S_ISDIR(mode):
                    destination.mkdir(exist_ok=True)
                    pending.append((entry_path, destination, into))
                    made.append((entry_path, destination))
                elif stat.S_ISREG(mode):
                    shutil.copy2(entry_path, destination, follow_symlinks=False)
            except OSError as exc:
                logger.warning("workspace copy skipped %s: %s", entry.path, exc)
    for entry_path, destination in reversed(made):  # children before parents: a copy changes its parent's times
        with contextlib.suppress(OSError):
            shutil.copystat(entry_path, destination, follow_symlinks=False)


def read_plain_file(directory: Path, name: str, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of a regular file, never through a symbolic link (the sandbox wrote it)."""
    try:
        fd = os.open(directory / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read(limit)


def _copy_in(source: Path, workspace: Path, target: str, mount: str) -> None:
    destination = workspace / _relative(target.rstrip("/") or "/", mount)
    if source.is_dir():
        shutil.copytree(source, destination, symlinks=True, dirs_exist_ok=True)
    elif target.endswith("/") or destination.is_dir():
        destination.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination / source.name)
    else:
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)


def _relative(path: str, mount: str) -> str:
    with contextlib.suppress(ValueError):
        return str(PurePosixPath(path).relative_to(mount))
    raise ValueError(f"{path} is outside {mount}")


def env_for(task: HarborTask) -> Mapping[str, str]:
    """The shell's environment: the sandbox's, then the task's ``ENV``."""
    return {**SANDBOX_ENV, **task.env}
