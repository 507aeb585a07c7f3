"""A hostile agent reaches for the host's kernel settings from inside its kernel: they are read-only.

The sandbox's uid is the server's on the host (root, when the server runs as root), and Linux lets
a process whose uid is the host's root write ``/proc/sys`` with no capability at all: with
``kernel.core_pattern`` the next crash on the machine runs a program of the agent's choosing as
root, outside every namespace. The agent only looks (which settings it may write) and writes one
setting back to the value it already has, so the test changes nothing on the machine it runs on.
The same uid reads what the host's ``/proc`` shows only to root.
"""

from __future__ import annotations

import os
import stat

import pytest

from omnienv.sandboxes.bubblewrap import _can_disable_userns
from tests.security._jupyter import agent, needs_bwrap, served_jupyter

pytestmark = needs_bwrap

PROBE = r"""
import os
paths = [os.path.join(root, name) for root, _, files in os.walk("/proc/sys") for name in files]
writable = [path for path in paths if os.access(path, os.W_OK)]
print("settings", len(paths) > 100, "writable", len(writable), writable[:5])
value = open("/proc/sys/vm/swappiness").read()
try:
    with open("/proc/sys/vm/swappiness", "w") as f:
        f.write(value)
    print("wrote swappiness")
except OSError as exc:
    print("refused", exc.strerror)
"""


def test_the_hosts_kernel_settings_are_read_only_in_the_sandbox() -> None:
    with served_jupyter() as (url, _), agent(url) as player:
        result = player.run(PROBE)
        assert result.failure is None, result.failure
        text = result.observation.text
        assert "settings True writable 0 []" in text, text  # still readable, as programs expect
        assert "refused Read-only file system" in text, text


def test_what_the_host_shows_only_to_root_in_proc_is_unreadable() -> None:
    """The kernel's slab and page tables, its timers and memory map: what a kernel exploit reads.
    The host shows them to root alone, and the sandbox's uid is the host's root here."""
    hidden = [
        entry.path
        for entry in os.scandir("/proc")
        if not entry.name.isdigit() and entry.is_file() and not entry.stat().st_mode & stat.S_IROTH
    ]
    assert hidden, "this host's /proc shows every file to everyone: nothing to check"
    code = f"""
read = []
for path in {hidden!r}:
    try:
        with open(path, "rb") as f:
            f.read(64)
        read.append(path)
    except OSError:
        pass
print("read", read)
"""
    with served_jupyter() as (url, _), agent(url) as player:
        result = player.run(code)
        assert "read []" in result.observation.text, result.observation.text


CGROUP_MOUNT = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
read, write = os.pipe()
child = os.fork()
if child == 0:  # a user, mount and cgroup namespace of its own, then the host's cgroup2 hierarchy
    done = libc.unshare(0x10000000 | 0x00020000 | 0x02000000) == 0
    os.makedirs("/tmp/cg", exist_ok=True)
    done = done and libc.mount(b"none", b"/tmp/cg", b"cgroup2", 0, None) == 0
    os.write(write, b"mounted" if done else os.strerror(ctypes.get_errno()).encode())
    os._exit(0)
os.close(write)
print("cgroup2:", os.read(read, 200).decode())
os.waitpid(child, 0)
"""


@pytest.mark.skipif(not _can_disable_userns(), reason="this bubblewrap cannot forbid user namespaces (0.8 on)")
def test_the_kernel_makes_no_namespace_to_mount_the_hosts_cgroups_in() -> None:
    """In a user namespace of its own, the sandbox's uid (the host's root) mounted the host's cgroup2
    hierarchy as it finds it (its root, where the sandbox has no cgroup of that version), made cgroups
    there that outlived it, and could kill every process of one through ``cgroup.kill``."""
    with served_jupyter() as (url, _), agent(url) as player:
        text = player.run(CGROUP_MOUNT).observation.text
        assert "cgroup2:" in text and "mounted" not in text, text
