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

__all__ = ["SANDBOX_ENV", "build_workspace", "copy_tree", "env_for", "read_plain_file", "workspace_binds"]

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


def workspace_binds(sandbox: Sandbox, task: HarborTask) -> list[tuple[str, str]]:
    """The workspace's host directory, mounted at the task's working directory."""
    return [(str(sandbox.work_dir / "workspace"), task.mount)]


def build_workspace(sandbox: Sandbox, task: HarborTask) -> None:
    """Lay out the starting state: the task's copies, then its offline RUN steps, in order."""
    workspace = sandbox.work_dir / "workspace"
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
    ``follow_within``, whose target is copied in their place.
    """
    target.mkdir(parents=True, exist_ok=True)
    with os.scandir(source) as entries:
        for entry in entries:
            destination = target / entry.name
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
                resolved = Path(entry.path).resolve() if stat.S_ISLNK(mode) and follow_within else None
                if resolved is not None and follow_within and resolved.is_relative_to(follow_within.resolve()):
                    mode = resolved.stat().st_mode
                    entry_path = str(resolved)
                else:
                    entry_path = entry.path
                if stat.S_ISLNK(mode):
                    os.symlink(os.readlink(entry.path), destination)
                elif stat.S_ISDIR(mode):
                    copy_tree(Path(entry_path), destination, follow_within=follow_within)
                    shutil.copystat(entry_path, destination, follow_symlinks=False)
                elif stat.S_ISREG(mode):
                    shutil.copy2(entry_path, destination, follow_symlinks=False)
            except OSError as exc:
                logger.warning("workspace copy skipped %s: %s", entry.path, exc)


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
