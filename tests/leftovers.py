"""What killed test runs leave behind, taken down when the next run starts.

A test that drives sandboxes gives them a base folder of its own (``oj-*`` in the temp dir), so
that it can count what they leave; a run killed mid-test leaves that folder, with sandboxes whose
owner died (mounts, files, cgroups). A pool sweeps only the folder it is given, and the next run's
tests make new ones, so the suite sweeps these itself (tests/conftest.py). The private Docker daemon's folders are swept
where the daemon is made (tests/deploy/daemon.py).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

from omnienv.sandboxes.upkeep import sweep_stale

TEST_BASES = "oj-*"
IDLE_S = 3600.0
"""A base folder left alone this long belongs to no running test (a whole run takes less)."""


def sweep_test_sandboxes(temp_dir: str | None = None, idle_s: float = IDLE_S) -> int:
    """Sweep the sandboxes of dead owners in every test base folder, then delete the folders that
    are empty and idle. Returns how many sandboxes were swept; a live one is never touched."""
    swept = 0
    for base in Path(temp_dir or tempfile.gettempdir()).glob(TEST_BASES):
        if not base.is_dir() or base.is_symlink():
            continue
        idle = time.time() - base.stat().st_mtime > idle_s  # before the sweep changes it
        swept += sweep_stale(str(base))
        if idle:
            with contextlib.suppress(OSError):  # not empty: a live sandbox, or not ours
                base.rmdir()
    return swept
