"""The homes of one desktop, and the host's reads and writes in them, never through a symlink.

The session's home is its sandbox's work dir: the agent's shell, its terminal and the window
manager see it. An app launched with a home of its own gets a directory of the sandbox's run dir
instead, mounted at the same path (``/home/user``) in that app's sandbox alone: nothing else of
the session mounts it, so what is there was written by the app (or by the host, seeding the
task). Checks read it, and a shell cannot forge it.

Every path is walked one component at a time with ``O_NOFOLLOW`` from the home's own directory:
a symlink the agent (or an app it drives) planted is never followed, and ``..`` is refused.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

from omnienv.sandboxes.bubblewrap import HOME

__all__ = ["Homes", "path_kind", "read_file", "write_file"]

APP_NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")


class Homes:
    """Where each home of a desktop lives on the host, the session's and each app's own, and the
    host's reads and writes there (a path names an entry of the home; ``app`` None: the session's)."""

    def __init__(self, session_home: Path, own_homes: Path) -> None:
        self.session_home = session_home
        self._own_homes = own_homes

    def of(self, app: str | None, make: bool = True) -> Path:
        """The host directory of ``app``'s own home (made on first use), or the session's home."""
        if app is None:
            return self.session_home
        if not APP_NAME.fullmatch(app):
            raise ValueError(f"not an app name: {app!r}")
        home = self._own_homes / app
        if make:
            home.mkdir(parents=True, exist_ok=True)
        return home

    def read(self, app: str | None, path: str, limit: int) -> bytes | None:
        return read_file(self.of(app, make=False), path, limit)

    def write(self, app: str | None, path: str, data: bytes) -> None:
        write_file(self.of(app), path, data)

    def kind(self, app: str | None, path: str) -> str | None:
        return path_kind(self.of(app, make=False), path)


def _parts(path: str) -> list[str]:
    parts = [part for part in path.removeprefix(HOME).split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"not a path inside the home directory: {path!r}")
    return parts


def _open_parent(root: Path, parts: list[str], make: bool) -> int:
    """A descriptor of the directory holding ``parts[-1]``, walked without following symlinks."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parts[:-1]:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def path_kind(root: Path, path: str) -> str | None:
    """What ``path`` names under ``root``: "file", "dir", "symlink" or "other"; None if absent."""
    try:
        parts = _parts(path)
        parent = _open_parent(root, parts, make=False)
    except (OSError, ValueError):
        return None
    try:
        mode = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode
    except OSError:
        return None
    finally:
        os.close(parent)
    if stat.S_ISLNK(mode):
        return "symlink"
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def read_file(root: Path, path: str, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of a regular file under ``root``; None for anything else or nothing."""
    try:
        parts = _parts(path)
        parent = _open_parent(root, parts, make=False)
    except (OSError, ValueError):
        return None
    try:
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=parent)
    except OSError:
        return None
    finally:
        os.close(parent)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device would block or lie
            return None
        return handle.read(limit)


def write_file(root: Path, path: str, data: bytes) -> None:
    """Write a file under ``root`` (parents made); a ValueError for a path that leaves it."""
    parts = _parts(path)
    parent = _open_parent(root, parts, make=True)
    try:
        fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644, dir_fd=parent)
    finally:
        os.close(parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
