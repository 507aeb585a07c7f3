"""The agent's workspace: built from a task's steps in its sandbox, and copied out for the verifier.

The copy is made by the host after the agent's processes are dead, and it takes only directories,
regular files and symbolic links (as links, never followed): a FIFO or device the agent left
cannot block it, and a link to ``/etc/shadow`` is a dangling link in the verifier's sandbox.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from omnienv.envs.terminal.dockerfile import IMAGE_PATH, BuildStep
from omnienv.envs.terminal.harbor import HarborTask
from omnienv.sandboxes.sandbox import Sandbox

__all__ = [
    "SANDBOX_ENV",
    "TooManyFilesError",
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
    "PATH": IMAGE_PATH,
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


def solution_link(task: HarborTask, solution_dir: str) -> list[tuple[str, str]]:
    """``/solution``, where Harbor's oracle puts a task's solution, as a link to ``solution_dir``;
    none for a task whose working directory is there (or holds it)."""
    mount = PurePosixPath(task.mount)
    harbors = PurePosixPath("/solution")
    return (
        []
        if mount == harbors or harbors in mount.parents or mount in harbors.parents
        else [(solution_dir, str(harbors))]
    )


def build_workspace(sandbox: Sandbox, task: HarborTask) -> None:
    """Lay out the starting state: the task's copies, then its offline RUN steps, in order.

    Both run in the sandbox: a copy made by the host would follow a link that an earlier step
    put in the workspace (``app/x -> /etc``) and write a host file."""
    workspace = workspace_dir(sandbox)
    workspace.mkdir(exist_ok=True)
    sandbox.write_work_file(".gitconfig", _GITCONFIG)
    for directory in {task.workdir, *(step.cwd for step in task.steps)}:
        (workspace / _relative(directory, task.mount)).mkdir(parents=True, exist_ok=True)
    for step in task.steps:
        if step.kind == "copy":
            source = _context_file(task, step.source)
            into = "into" if step.target.endswith("/") else "to"
            target = step.target.rstrip("/") or "/"
            name = PurePosixPath(step.source).name
            _run_step(sandbox, task, ["sh", "-c", _COPY, "copy", target, into, name], SANDBOX_ENV, source, step)
        else:
            script = f"cd {shlex.quote(step.cwd)} && {step.command}"
            _run_step(sandbox, task, ["bash", "-c", script], {**SANDBOX_ENV, **dict(step.env)}, None, step)


_CONTEXT = "/.omnienv-context"
_COPY = f"""set -e
if [ -d {_CONTEXT} ]; then mkdir -p -- "$1"; cp -dR --preserve=mode,timestamps -- {_CONTEXT}/. "$1"/
elif [ "$2" = into ] || [ -d "$1" ]; then mkdir -p -- "$1"; cp -dR --preserve=mode,timestamps -- {_CONTEXT} "$1/$3"
else mkdir -p -- "$(dirname -- "$1")"; cp -dR --preserve=mode,timestamps -- {_CONTEXT} "$1"
fi
"""
"""Docker's COPY: a directory's contents into the target; a file into a target directory (one
named with a trailing slash, or one that exists) or as the target."""


def _context_file(task: HarborTask, source: str) -> Path:
    """A COPY source, its links followed: it must stay inside the folder the task was read from."""
    path = task.path / "environment" / source
    resolved = path.resolve()
    if not resolved.is_relative_to(task.root.resolve()) or not resolved.exists():
        raise RuntimeError(f"task '{task.id}': COPY {source} leads to {resolved}, outside {task.root}")
    return resolved


def _run_step(
    sandbox: Sandbox, task: HarborTask, argv: list[str], env: Mapping[str, str], source: Path | None, step: BuildStep
) -> None:
    files = [] if source is None else [(str(source), _CONTEXT)]
    what = f"COPY {step.source} {step.target}" if step.kind == "copy" else f"RUN {step.command[:100]}"
    with tempfile.TemporaryFile() as log:
        process = sandbox.spawn(
            argv, env=env, binds=workspace_binds(sandbox, task), files=files, stdout=log, stderr=log
        )
        try:
            code = process.wait(timeout=task.build_timeout)
        except subprocess.TimeoutExpired:
            sandbox.kill()
            raise RuntimeError(f"task '{task.id}': {what} took over {task.build_timeout:g} s") from None
        if code != 0:
            log.seek(0)
            tail = log.read()[-1500:].decode("utf-8", "replace")
            raise RuntimeError(f"task '{task.id}': {what} exited with {code}:\n{tail}")


class TooManyFilesError(Exception):
    """A copy met more than its limit of entries: the tree is the agent's flood, not a workspace."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} files, directories and links")
        self.limit = limit


def copy_tree(
    source: Path,
    target: Path,
    *,
    follow_within: Path | None = None,
    strict: bool = False,
    mounted_at: str | None = None,
    limit: int | None = None,
) -> None:
    """Copy ``source``'s contents into ``target``: directories, regular files and links only.

    A regular file's holes stay holes and its hard links hard links: the copy takes no more room
    than the tree (a file linked under a thousand names, copied a thousand times, filled the
    verifier's storage and the host's memory). Symbolic links are copied as links, except those that
    lead to a file or directory inside ``follow_within``, whose target is copied in their place
    (once along any one path, so a link to its own parent ends). The walk keeps its own stack: an
    agent's directories nested a thousand deep are copied, not a ``RecursionError`` that would void
    the episode. What cannot be
    copied is skipped with a warning (the agent's unreadable files), or raises when ``strict`` (a
    task's own tests: a verifier missing a file would grade the workspace, not say the host failed).
    With ``mounted_at`` (where ``source`` is mounted in a sandbox), a link that would lead out of it
    there, anywhere but the host's read-only system (:func:`leads_out`), is not copied.

    With ``limit``, meeting more entries than that (copied or skipped) stops the copy with
    :class:`TooManyFilesError`: where the sandbox's storage could not be capped in files, an agent's
    millions of empty files would otherwise hold the host's thread and memory for minutes.
    """
    within = follow_within.resolve() if follow_within is not None else None
    target.mkdir(parents=True, exist_ok=True)
    pending: list[tuple[str, Path, frozenset[Path]]] = [(str(source), target, frozenset())]
    made: list[tuple[str, Path]] = []  # directories copied, parents first: their times are set last
    linked: dict[tuple[int, int], Path] = {}  # the copy of each file with other names
    first = True
    seen = 0
    while pending:
        directory, copy, followed = pending.pop()
        try:
            entries = os.scandir(directory)  # read as it is copied: no list of the million files an agent made
        except OSError as exc:
            if first or strict:
                raise
            logger.warning("workspace copy skipped %s: %s", directory, exc)
            continue
        first = False
        with entries:
            for entry in entries:
                seen += 1
                if limit is not None and seen > limit:
                    raise TooManyFilesError(limit)
                destination = copy / entry.name
                try:
                    info = entry.stat(follow_symlinks=False)
                    entry_path, into = entry.path, followed
                    if stat.S_ISLNK(info.st_mode) and within is not None:
                        resolved = Path(entry.path).resolve()
                        if resolved.is_relative_to(within) and resolved not in followed:
                            info, entry_path, into = resolved.stat(), str(resolved), followed | {resolved}
                    mode = info.st_mode
                    if (
                        stat.S_ISLNK(mode)
                        and mounted_at is not None
                        and leads_out(Path(entry.path), source, mounted_at)
                    ):
                        logger.warning("workspace copy skipped %s: a link out of the workspace", entry.path)
                    elif stat.S_ISLNK(mode):
                        os.symlink(os.readlink(entry.path), destination)
                    elif stat.S_ISDIR(mode):
                        destination.mkdir(exist_ok=True)
                        pending.append((entry_path, destination, into))
                        made.append((entry_path, destination))
                    elif stat.S_ISREG(mode) and (info.st_dev, info.st_ino) in linked:
                        os.link(linked[info.st_dev, info.st_ino], destination)  # a hard link stays one
                    elif stat.S_ISREG(mode):
                        _copy_file(entry_path, destination)
                        if info.st_nlink > 1:
                            linked[info.st_dev, info.st_ino] = destination
                except OSError as exc:
                    if strict:
                        raise
                    logger.warning("workspace copy skipped %s: %s", entry.path, exc)
    for entry_path, destination in reversed(made):  # children before parents: a copy changes its parent's times
        with contextlib.suppress(OSError):
            shutil.copystat(entry_path, destination, follow_symlinks=False)


def _copy_file(source: str, destination: Path) -> None:
    """``shutil.copy2`` of a regular file, its holes kept as holes.

    A sparse file costs the agent nothing (``truncate -s 200M big``, a few of them); copied byte for
    byte it would fill the verifier's storage with zeros, leave no room for the agent's other files
    or the tests' own, and hold that much of the host's memory, which no sandbox's limit counts."""
    reader = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        size = os.fstat(reader).st_size
        writer = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            offset = 0
            while offset < size:
                try:
                    start = os.lseek(reader, offset, os.SEEK_DATA)
                except OSError as exc:
                    if exc.errno != errno.ENXIO:
                        raise
                    break  # a hole to the end
                end = os.lseek(reader, start, os.SEEK_HOLE)
                os.lseek(writer, start, os.SEEK_SET)
                while start < end:
                    sent = os.sendfile(writer, reader, start, min(end - start, 1 << 30))
                    if sent == 0:  # the file shrank
                        break
                    start += sent
                offset = end
            os.ftruncate(writer, size)
        finally:
            os.close(writer)
    finally:
        os.close(reader)
    shutil.copystat(source, destination, follow_symlinks=False)


_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""The host's read-only system, the same in every sandbox (``/proc`` and ``/dev`` are not: through
``/proc/self/root`` a link reaches the whole of the sandbox it is read in)."""


def leads_out(link: Path, workspace: Path, mount: str) -> bool:
    """Whether ``link`` (in ``workspace``, the host directory a sandbox mounts at ``mount``), resolved as
    that sandbox's kernel would, leads anywhere but the workspace and the host's read-only system.

    In the agent's sandbox a link to ``/tests/expected.txt`` leads nowhere; in the verifier's it is
    the answer, and ``cmp /app/out.txt /tests/expected.txt`` would pass. Links are followed as the
    kernel does, through the workspace's own links and the system's, ``..`` after each."""
    pending = list(reversed(PurePosixPath(os.readlink(link)).parts))
    current = PurePosixPath(mount) / link.parent.relative_to(workspace)
    hops = 0
    while pending:
        part = pending.pop()
        if part == "/":
            current = PurePosixPath("/")
        elif part == "..":
            current = current.parent
        elif part not in (".", ""):
            candidate = current / part
            if _inside(str(candidate), mount):
                host = workspace / candidate.relative_to(mount)
            elif any(_inside(str(candidate), root) for root in _SYSTEM):
                host = Path(candidate)
            else:
                return True
            if host.is_symlink():
                hops += 1
                if hops > 40:  # a loop: the kernel gives up too
                    return True
                pending.extend(reversed(PurePosixPath(os.readlink(host)).parts))
            else:
                current = candidate
    return False


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


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


def _relative(path: str, mount: str) -> str:
    with contextlib.suppress(ValueError):
        relative = PurePosixPath(path).relative_to(mount)
        if ".." not in relative.parts:
            return str(relative)
    raise ValueError(f"{path} is outside {mount}")


def env_for(task: HarborTask) -> Mapping[str, str]:
    """The shell's environment: the sandbox's, then the task's ``ENV``."""
    return {**SANDBOX_ENV, **task.env}
