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
