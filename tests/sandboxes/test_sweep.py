"""Sweeping the sandboxes of dead owners: a held lock is never swept, a free one always, a folder
whose owner died before it was locked once it has been left alone for the grace time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from omnienv.sandboxes.sandbox import Sandbox
from omnienv.sandboxes.tmpfs import remove_tree
from omnienv.sandboxes.upkeep import sweep_stale


def test_only_roots_of_dead_owners_are_swept() -> None:
    base = Path(tempfile.mkdtemp(prefix="oj-sweep-"))
    try:
        live = Sandbox(base_dir=str(base), prefix="omnienv-t-")
        dead = Sandbox(base_dir=str(base), prefix="omnienv-t-")
        os.close(dead._owner_lock)  # as if its process had died: the lock is free
        old = base / "omnienv-t-unlocked-old"
        fresh = base / "omnienv-t-unlocked-fresh"
        for root in (old, fresh):
            (root / "work").mkdir(parents=True)
        past = time.time() - 120
        os.utime(old, (past, past))
        (base / "omnienv-t-a-file").write_text("not a sandbox")
        (base / "other").mkdir()

        assert sweep_stale(str(base), prefix="omnienv-t-") == 2
        assert sorted(p.name for p in base.iterdir()) == sorted(
            [live.root.name, fresh.name, "omnienv-t-a-file", "other"]
        )
        assert sweep_stale(str(base), prefix="omnienv-t-", unlocked_grace=0) == 1
        assert live.root.exists() and not fresh.exists()
        live.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_killed_runs_test_sandboxes_and_idle_base_folders_are_swept(tmp_path: Path) -> None:
    """tests/leftovers.py: what a run killed mid-test left in its tests' base folders."""
    from tests.leftovers import sweep_test_sandboxes

    killed, running = tmp_path / "oj-killed", tmp_path / "oj-running"
    killed.mkdir()
    running.mkdir()
    dead = Sandbox(base_dir=str(killed))
    os.close(dead._owner_lock)  # its owner died
    live = Sandbox(base_dir=str(running))
    try:
        past = time.time() - 2 * 3600
        for base in (killed, running):
            os.utime(base, (past, past))
        assert sweep_test_sandboxes(str(tmp_path)) == 1
        assert not killed.exists()  # swept, then deleted: empty and idle
        assert live.root.exists() and running.exists()  # a live sandbox keeps its base folder
    finally:
        live.close()


def test_a_tree_nested_past_pythons_recursion_limit_is_removed(tmp_path: Path) -> None:
    """Python 3.11's ``shutil.rmtree`` recurses: an agent's deep directories must not outlive it."""
    root = tmp_path / "omnienv-deep"
    (root / "work").mkdir(parents=True)
    fd = os.open(root / "work", os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1100):
        os.mkdir("d", dir_fd=fd)
        fd, parent = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
        os.close(parent)
    os.close(fd)
    remove_tree(root)
    assert not root.exists()


REMOVE_AS_OWNER = """
import os, sys
from pathlib import Path
from omnienv.sandboxes.tmpfs import remove_tree
root = Path(sys.argv[1])
(root / "work" / "home" / "locked" / "deep").mkdir(parents=True)
(root / "work" / "home" / "locked" / "deep" / "file").write_text("x")
os.symlink(root.parent / "outside", root / "work" / "home" / "locked" / "link")
os.chmod(root / "work" / "home" / "locked" / "deep", 0)
os.chmod(root / "work" / "home" / "locked", 0)
remove_tree(root)
print(os.path.lexists(root))
"""


def test_a_tree_its_sandbox_made_unreadable_is_removed(tmp_path: Path) -> None:
    """A server that is not root reads the agent's files as their owner only: directories the agent
    made unreadable (``chmod 000``) outlived the sandbox, and every sweep after it. (Root without the
    capabilities that let it read any file stands for such a server.)"""
    as_owner = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
    root = tmp_path / "omnienv-locked"
    (tmp_path / "outside").write_text("a host file")
    (tmp_path / "outside").chmod(0o400)
    child = subprocess.run(
        [*as_owner, sys.executable, "-c", REMOVE_AS_OWNER, str(root)],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert (child.returncode, child.stdout.strip()) == (0, "False"), child.stderr
    assert (tmp_path / "outside").stat().st_mode & 0o777 == 0o400, "a link in the tree must never be followed"
