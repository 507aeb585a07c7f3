"""A hostile agent reaches for the host's kernel settings from inside its kernel: they are read-only.

The sandbox's uid is the server's on the host (root, when the server runs as root), and Linux lets
a process whose uid is the host's root write ``/proc/sys`` with no capability at all: with
``kernel.core_pattern`` the next crash on the machine runs a program of the agent's choosing as
root, outside every namespace. The agent only looks (which settings it may write) and writes one
setting back to the value it already has, so the test changes nothing on the machine it runs on.
"""

from __future__ import annotations

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
