"""A sandboxed program's launch: bound to the process that starts it, before its first instruction."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from omnienv.sandboxes.bubblewrap import dies_with_parent


def test_a_command_whose_owner_died_before_it_started_never_runs(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    touch = ["/bin/sh", "-c", f"touch {ran}"]
    # pid 1 stands for an owner that died between the fork and the command: the orphan's parent
    # is then init (or a subreaper), never the owner
    assert subprocess.run(dies_with_parent(touch, parent=1)).returncode != 0 and not ran.exists()
    assert subprocess.run(dies_with_parent(touch)).returncode == 0 and ran.exists()


OWNER = """
import subprocess, sys
import pytest

from omnienv.sandboxes.bubblewrap import dies_with_parent
print(subprocess.Popen(dies_with_parent(["sleep", "60"])).pid, flush=True)
sys.stdin.read()
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_command_dies_with_the_process_that_started_it() -> None:
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pid = None
    try:
        assert owner.stdout is not None
        pid = int(owner.stdout.readline())
        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(pid), "the command outlived the process that started it"
    finally:
        owner.kill()
        owner.wait()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)


def test_a_bind_from_the_sandboxs_home_or_through_a_link_is_refused() -> None:
    """The sandbox can rename anything in its home and bwrap follows links in a bind's source:
    either would let it choose the host directory its next program gets."""
    from omnienv.sandboxes.sandbox import Sandbox

    sandbox = Sandbox()
    try:
        (sandbox.work_dir / "app").mkdir()
        (sandbox.private_dir / "link").symlink_to(sandbox.private_dir / "app")
        for source in (sandbox.work_dir / "app", sandbox.work_dir, sandbox.private_dir / "link"):
            with pytest.raises(ValueError, match="cannot bind"):
                sandbox.spawn(["true"], binds=[(str(source), "/app")])
        assert sandbox.processes == []
    finally:
        sandbox.close()


def test_no_host_path_of_a_mount_shows_inside_and_no_descriptor_is_left_open() -> None:
    """``/proc/1/cmdline`` inside is bwrap's command line: its options (every mount's host path)
    are read from a memory file, which bwrap closes, not passed as arguments. ``/proc/1/environ``
    is bwrap's environment: no host path there either."""
    from omnienv.sandboxes.sandbox import Sandbox

    sandbox = Sandbox()
    try:
        (sandbox.private_dir / "app").mkdir()
        script = "cat /proc/1/cmdline /proc/1/environ | tr '\\0' ' '; echo; echo $(ls /proc/self/fd); echo $MARK"
        process = sandbox.spawn(
            ["sh", "-c", script],
            env={"PATH": "/usr/bin:/bin", "MARK": "set"},
            binds=[(str(sandbox.private_dir / "app"), "/app")],
            stdout=subprocess.PIPE,
        )
        out, _ = process.communicate(timeout=30)
        cmdline, fds, mark = out.decode().splitlines()
        assert process.returncode == 0 and mark == "set"  # the options were read: the variable is there
        assert str(sandbox.root) not in cmdline and "--bind" not in cmdline, cmdline
        assert os.getcwd() == "/" or f"PWD={os.getcwd()}" not in cmdline, cmdline  # bwrap's environment
        assert sorted(fds.split()) == ["0", "1", "2", "3"], fds  # 3 is ls's own listing of the folder
    finally:
        sandbox.close()


def test_the_machines_private_keys_are_not_shown_only_its_public_certificates() -> None:
    """The sandbox's user is the server's: under a server run as root, root's own files of the
    system it shows are the agent's. ``/etc/ssl/private`` (the machine's TLS keys) was one."""
    from omnienv.sandboxes.sandbox import Sandbox

    sandbox = Sandbox()
    try:
        process = sandbox.spawn(["ls", "-A", "/etc/ssl"], env={"PATH": "/usr/bin:/bin"}, stdout=subprocess.PIPE)
        out, _ = process.communicate(timeout=30)
    finally:
        sandbox.close()
    shown = set(out.decode().split())
    assert shown <= {"certs", "openssl.cnf"} and "private" not in shown, shown
    assert "certs" in shown or not Path("/etc/ssl/certs").is_dir()


TREE = "import os, time\nfor _ in range(9):\n    os.fork()\ntime.sleep(600)"  # up to 512 processes


def left_after_kill() -> set[int]:
    """The processes a sandbox's cgroup still holds once ``kill`` returned, the tree started."""
    from omnienv.sandboxes.sandbox import Sandbox
    from tests.polling import eventually

    sandbox = Sandbox()
    try:
        sandbox.spawn(["python3", "-c", TREE], env={"PATH": "/usr/bin:/bin"})
        if sandbox.cgroup.dirs:
            eventually(lambda: len(sandbox.cgroup.pids()) > 100, what="the tree of processes started")
        sandbox.kill()
        return sandbox.cgroup.pids()
    finally:
        sandbox.close()


def test_kill_returns_once_no_process_of_the_sandbox_is_left() -> None:
    """A killed process stays in the sandbox's cgroup until it has exited and been reaped, and a
    few hundred take a while on a busy machine: ``kill`` returned while some were left, and a
    stopped kernel still showed its fork bomb's processes."""
    assert [left_after_kill() for _ in range(3)] == [set(), set(), set()]
