"""What of an author's folder goes into a build context, and how it is copied.

A Space is public by default and an image is shared, so a copy carries the project's code and
nothing of the machine it was made on: secrets kept beside the code (``.env``, ``.netrc``, keys),
virtualenvs under any name, caches, and what the project's own ``.gitignore`` keeps out of its
repository (git itself is asked, so its rules apply exactly). Links are copied as links, and only
when they lead to a place inside the copied folder: a link to a host file (a private key) is
refused, never followed into the bundle.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from omnienv.deploy.errors import DeployError

__all__ = ["LEFT_OUT", "MARKER", "copy_folder", "dockerignore"]

MARKER = ".omnienv-context"
"""The file every written context holds: only a folder holding it (or an empty one) is ever cleared."""
LEFT_OUT = (
    "__pycache__", "*.pyc", ".git", ".venv", ".venvs", "*.egg-info", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".env", ".env.*", ".netrc", ".ssh", "*.pem", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
)  # fmt: skip
"""Names never copied, at any depth: caches, secrets, keys."""
_FOLDER_SIGNS = ("pyvenv.cfg", "conda-meta", MARKER)
"""A folder holding one of these is a virtualenv, a conda environment or an old context: never copied."""


def dockerignore() -> str:
    """The context's ``.dockerignore``: the same names, so files added to the folder by hand after
    it was written stay out of the build too (the CA bundle omnienv writes excepted)."""
    lines = [f"**/{name}" for name in LEFT_OUT]
    return "\n".join(["# Written by omnienv: never sent to the daemon.", MARKER, *lines, "!build-ca.pem", ""])


def copy_folder(source: Path, target: Path, *, skip: Path) -> None:
    """Copy ``source`` into ``target`` (new) without what :data:`LEFT_OUT`, virtualenvs, folders
    holding :data:`MARKER` (old contexts), ``skip`` (the context being written) and git's ignore
    rules leave out. Raises :class:`DeployError` for a link that leads out of ``source``."""
    root = source.resolve()
    ignored = git_ignored(root)
    skip = skip.resolve()
    target.mkdir()
    pending = [(root, target)]
    while pending:
        folder, copy = pending.pop()
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            path = Path(entry.path)
            if _left_out(path, path.relative_to(root).as_posix(), ignored, skip):
                continue
            if _copy_entry(path, copy / entry.name, root):
                pending.append((path, copy / entry.name))


def _left_out(path: Path, relative: str, ignored: frozenset[str], skip: Path) -> bool:
    """Whether ``path`` stays behind: by its name, by git's rules, or as a folder that is no code
    (a virtualenv, an old context, the context being written, which would otherwise copy itself)."""
    if any(fnmatch.fnmatchcase(path.name, pattern) for pattern in LEFT_OUT):
        return True
    if relative in ignored or f"{relative}/" in ignored:
        return True
    if path.is_dir() and not path.is_symlink():
        return any((path / name).exists() for name in _FOLDER_SIGNS) or path == skip
    return False


def _copy_entry(path: Path, destination: Path, root: Path) -> bool:
    """Copy one entry (a folder is only made); True when it is a folder whose entries come next.
    Sockets, pipes and devices are not code and are left out."""
    if path.is_symlink():
        _copy_link(path, destination, root)
    elif path.is_dir():
        destination.mkdir()
        return True
    elif path.is_file():
        shutil.copy2(path, destination, follow_symlinks=False)
    return False


def _copy_link(link: Path, destination: Path, root: Path) -> None:
    """A link into ``root`` stays a link (relative, so it holds wherever the copy lands); any
    other would carry a file of this machine, or dangle, and is refused."""
    try:
        resolved = link.resolve()
    except (OSError, RuntimeError) as exc:  # a loop of links
        raise DeployError(f"{link} is a link that cannot be followed ({exc}): remove it before deploying") from None
    if not resolved.is_relative_to(root):
        raise DeployError(
            f"{link} links outside {root} (to {resolved}): a bundle never carries a file from outside "
            "the folder it copies; replace the link by a copy of what it should hold, or remove it"
        )
    os.symlink(os.path.relpath(resolved, link.parent), destination)


def git_ignored(root: Path) -> frozenset[str]:
    """Paths under ``root`` (relative, folders ending in ``/``) that git's ignore rules leave out:
    the checkout's own (``.gitignore`` files, ``info/exclude``, the user's excludes) when ``root``
    is in one that does not ignore it whole, else the ``.gitignore`` files inside ``root``. Empty
    where git is not installed: :data:`LEFT_OUT` still applies."""
    git = shutil.which("git")
    if git is None:
        return frozenset()
    listing = ["ls-files", "-z", "--others", "--ignored", "--directory"]
    if _in_checkout(git, root) and not _ignored_whole(git, root):
        return _git(git, ["-C", str(root), *listing, "--exclude-standard"], root)
    with tempfile.TemporaryDirectory(prefix="omnienv-gitignore-") as scratch:
        _git(git, ["init", "-q", "--bare", scratch], root)
        repository = [f"--git-dir={scratch}", f"--work-tree={root}", "-C", str(root)]
        return _git(git, [*repository, *listing, "--exclude-per-directory=.gitignore"], root)


def _in_checkout(git: str, root: Path) -> bool:
    done = subprocess.run([git, "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True)
    if done.returncode == 0:
        return done.stdout.strip() == "true"
    if "not a git repository" in done.stderr:
        return False
    raise DeployError(f"git cannot read the checkout holding {root} ({done.stderr.strip()}): fix that, then retry")


def _ignored_whole(git: str, root: Path) -> bool:
    """Whether the checkout ignores ``root`` itself (a suite downloaded into an ignored folder):
    its rules then say nothing of the files inside, only the folder's own ``.gitignore`` does."""
    done = subprocess.run([git, "-C", str(root), "check-ignore", "-q", "."], capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise DeployError(f"git could not tell whether {root} is ignored ({done.stderr.strip()}): fix that, then retry")
    return done.returncode == 0


def _git(git: str, arguments: list[str], root: Path) -> frozenset[str]:
    done = subprocess.run([git, *arguments], capture_output=True)
    if done.returncode != 0:
        error = done.stderr.decode(errors="replace").strip()
        raise DeployError(f"git could not list what {root}'s ignore rules leave out ({error}): fix that, then retry")
    return frozenset(name for name in done.stdout.decode(errors="surrogateescape").split("\0") if name)
