"""A machine's upkeep for sandboxes: the start-up probe, and the sweep of what dead owners left.

:func:`preflight` runs once, when a server starts an environment that runs the agent's code:
bubblewrap must work here, and each limit the machine cannot enforce is said then, not at the
first episode. :func:`sweep_stale` deletes the sandboxes (files, mounts, cgroups) of owners that
died without closing them: every sandbox holds an ``owner.lock`` while its owner lives.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import subprocess
import tempfile
import time
from pathlib import Path

from omnienv.sandboxes.bubblewrap import LAUNCH_ENV, SandboxUnavailableError, bwrap_command
from omnienv.sandboxes.cgroups import Cgroup, probe
from omnienv.sandboxes.sandbox import OWNER_LOCK
from omnienv.sandboxes.tmpfs import mount_tmpfs, remove_tree, unmount

__all__ = ["preflight", "sweep_stale"]


@functools.cache
def preflight() -> None:
    """bubblewrap must run here (probed once), and every limit it cannot enforce is said loudly now.

    Environments that run the agent's code call this from :meth:`EnvironmentBase.preflight
    <omnienv.core.env.EnvironmentBase.preflight>`, so a server says it at start-up, before the first
    episode; an environment never runs the agent's programs unsandboxed.
    """
    with tempfile.TemporaryDirectory(prefix="omnienv-probe-") as work:
        command = bwrap_command(["true"], work_dir=work)
        try:
            probe_run = subprocess.run(command, capture_output=True, timeout=30, check=False, env=dict(LAUNCH_ENV))
        except (OSError, subprocess.TimeoutExpired) as exc:
            probe_run = subprocess.CompletedProcess(command, -1, b"", str(exc).encode())
        if probe_run.returncode != 0:
            reason = probe_run.stderr.decode("utf-8", "replace").strip()[:300]
            raise SandboxUnavailableError(
                f"bubblewrap cannot run here ({reason}): omnienv never runs the agent's programs unsandboxed. "
                "Install it ('make system-deps') and allow user namespaces (sysctl "
                "kernel.unprivileged_userns_clone=1, or run the server as root); in a container, start it with "
                "--security-opt seccomp=unconfined --security-opt systempaths=unconfined (docs/deploy.md), "
                "which omnienv's clients and omnienv serve --image do"
            )
        probe()  # warns once for every per-sandbox limit the machine cannot enforce
        quota = Path(work) / "quota"
        quota.mkdir()
        if mount_tmpfs(quota, 1024 * 1024, 16):  # warns once when work dirs cannot be capped
            unmount(quota)


def _unlocked_for(root: Path) -> float:
    """Seconds since a root without a named lock last changed (its owner died before naming it)."""
    try:
        return time.time() - root.stat().st_mtime
    except OSError:
        return 0.0


def sweep_stale(base_dir: str | None = None, prefix: str = "omnienv-", *, unlocked_grace: float = 60.0) -> int:
    """Delete the sandboxes of owners that died (their lock is free): files, mounts, cgroups.

    A root that never got its lock (its owner died in the microseconds after making the folder) is
    deleted once it has not changed for ``unlocked_grace`` seconds: it cannot be told from one being
    made any sooner.
    """
    base = Path(base_dir or tempfile.gettempdir())
    removed = 0
    with contextlib.suppress(OSError):
        for root in base.iterdir():
            if not root.name.startswith(prefix) or not root.is_dir() or root.is_symlink():
                continue
            try:
                fd = os.open(root / OWNER_LOCK, os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:
                if _unlocked_for(root) >= unlocked_grace and not (root / OWNER_LOCK).exists():
                    remove_tree(root)
                    removed += 1
                continue
            except OSError:
                continue  # not ours
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # its owner is alive
            try:
                if probe().parents:
                    Cgroup(probe(), root.name).remove()
                remove_tree(root)
            finally:
                os.close(fd)
            removed += 1
    return removed
