"""Size-capped directories: a tmpfs mounted on the host side, where the machine allows mounts.

A sandbox's work and run dirs get one each (:mod:`omnienv.sandboxes.sandbox`), so what the agent
writes there is capped, in bytes and in files, and charged to the sandbox's memory. Without root or
``CAP_SYS_ADMIN`` the mount fails; that is said once, loudly, and only the per-file size limit
applies.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import functools
import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["mount_tmpfs", "remove_tree", "unmount"]

logger = logging.getLogger("omnienv.sandbox")

_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2


@functools.cache
def _libc() -> Any:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def mount_tmpfs(path: Path, size: int, files: int) -> bool:
    """Mount a tmpfs of ``size`` bytes and ``files`` inodes on ``path``; False (said once) where the
    machine refuses. Past either, the writer gets ENOSPC: an empty file takes no bytes, so only the
    inode count stops millions of them (and every hard link counts as one)."""
    options = f"size={size},nr_inodes={files},mode=0755".encode()
    if _libc().mount(b"tmpfs", str(path).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) == 0:
        return True
    _warn_no_quota(os.strerror(ctypes.get_errno()))
    return False


@functools.cache
def _warn_no_quota(reason: str) -> None:
    logger.warning(
        "sandbox work directories are NOT size-capped (%s: mounting a tmpfs needs root or "
        "CAP_SYS_ADMIN); only the per-file size limit applies, and no limit on their number of files. "
        "See docs/security.md.",
        reason,
    )


def unmount(path: Path) -> None:
    if _libc().umount2(str(path).encode(), _MNT_DETACH) != 0 and ctypes.get_errno() not in (errno.EINVAL, errno.ENOENT):
        logger.warning("could not unmount %s: %s", path, os.strerror(ctypes.get_errno()))


def _is_mount(path: Path) -> bool:
    with contextlib.suppress(OSError):
        return os.stat(path).st_dev != os.stat(path.parent).st_dev
    return False


def remove_tree(root: Path) -> None:
    """Delete a sandbox's root, unmounting its work and run dirs first."""
    for mounted in (root / "work", root / "run"):
        if _is_mount(mounted):
            unmount(mounted)
    try:
        shutil.rmtree(root, ignore_errors=True)
    except RecursionError:  # directories nested deeper than Python's recursion limit (3.11's rmtree recurses)
        _remove(root)
    if os.path.lexists(root):  # directories the sandbox made unreadable (chmod 000): as their owner, open them
        subprocess.run(["chmod", "-R", "u+rwx", "--", str(root)], capture_output=True, timeout=300)  # links ignored
        _remove(root)


def _remove(root: Path) -> None:
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(root)], capture_output=True, timeout=300)
