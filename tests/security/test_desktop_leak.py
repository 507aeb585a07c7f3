"""Acceptance: 20 desktop episodes, each trying a way out, leave nothing of theirs behind.

Each episode is played over the wire and tries one escape: many forked processes, detached ones
(``setsid``, double fork, ``nohup``), memory spread over several processes (past the sandbox's
total), or filling the home directory, ``/tmp`` and ``/dev/shm``. Afterwards no process, mount,
temp directory or cgroup of theirs may exist, nor their X servers. Other tests make desktops beside
this one (the suite runs on several workers), so this test's sandboxes get a name prefix of their own.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import uuid
from pathlib import Path

import pytest

import omnienv.sandboxes.xvfb.display as display_module
from omnienv.sandboxes.bubblewrap import Limits
from omnienv.sandboxes.xvfb import PREFIX, DisplaySpec
from tests.security._desktop import act, agent, live_desktop, needs_x, processes_with, served_desktop

pytestmark = needs_x

MiB = 1024**2
LIMITS = Limits(
    total_memory_bytes=256 * MiB, work_bytes=32 * MiB, tmp_bytes=16 * MiB, shm_bytes=16 * MiB, total_processes=160
)
ESCAPES = {
    "fork": "for i in $(seq 40); do sh -c 'sleep 1000; : {m}' & done; echo forked",
    "detach": "setsid env -i sh -c 'sleep 1000; : {m}' >/dev/null 2>&1 & "
    "( ( sh -c 'sleep 1000; : {m}' >/dev/null 2>&1 & ) & ); "
    "nohup sh -c 'sleep 1000; : {m}' >/dev/null 2>&1 & echo detached",
    "memory": "for i in 1 2 3 4 5; do python3 -c 'import time; a = b\"x\" * (80 << 20); time.sleep(1000)  # {m}' & "
    "done; sleep 2; echo spread",
    "disk": "for d in ~ /tmp /dev/shm; do dd if=/dev/zero of=$d/fill bs=1M count=100 2>&1 | grep -o 'No space left'; "
    "done; "
    "sh -c 'sleep 1000; : {m}' & echo filled",
}


def temp_dirs(prefix: str) -> set[str]:
    return {entry.name for entry in os.scandir(tempfile.gettempdir()) if entry.name.startswith(prefix)}


def cgroups(prefix: str) -> set[str]:
    found = set()
    for parent in [*Path("/sys/fs/cgroup").glob("*/omnienv"), Path("/sys/fs/cgroup/omnienv")]:  # v1, v2
        if parent.is_dir():
            found.update(str(child) for child in parent.iterdir() if child.name.startswith(prefix))
    return found


def test_twenty_escaping_episodes_leave_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"leak-{uuid.uuid4().hex}"
    prefix = f"{PREFIX}{marker[5:17]}-"
    monkeypatch.setattr(display_module, "PREFIX", prefix)
    roots: list[Path] = []
    servers: list[int] = []
    outputs: list[str] = []
    started = time.monotonic()
    with served_desktop(DisplaySpec(limits=LIMITS), size=2) as (url, manager):

        async def run() -> None:
            kinds = sorted(ESCAPES)
            async with agent(url) as client:
                for episode in range(20):
                    await client.reset(task="train/terminal-echo")
                    desktop = live_desktop(manager)
                    roots.append(desktop.root)
                    servers.extend((desktop.process.pid, desktop.server.pid))
                    command = ESCAPES[kinds[episode % len(kinds)]].format(m=f"{marker}-{episode}")
                    result = await act(client, "run_command", command=command)
                    assert result.failure is None, result.failure
                    outputs.append(result.observation.text)
                    alive = len(processes_with(f"{marker}-{episode}"))
                    if kinds[episode % len(kinds)] == "memory":  # 5 x 80 MiB do not fit in 256 MiB together
                        assert alive <= 3, "memory not capped per sandbox"
                    else:
                        assert alive >= 1, f"the escape of episode {episode} never ran: {result.observation.text}"
                    # the task done, so that the check answers at once instead of waiting for the desktop
                    await act(client, "run_command", command="rm -f ~/fill; echo hello-rl > ~/hello.txt")
                    await act(client, "terminate", status="success")

        asyncio.run(run())
    deadline = time.monotonic() + 20
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not processes_with(marker), f"processes outlived their episodes: {processes_with(marker)[:5]}"
    assert not [pid for pid in servers if os.path.exists(f"/proc/{pid}")], "X servers outlived their episodes"
    with open("/proc/self/mounts") as f:
        mounts = f.read()
    assert not [root for root in roots if str(root) in mounts], "mounts outlived their episodes"
    assert not [root for root in roots if root.exists()], "temp dirs outlived their episodes"
    assert not temp_dirs(prefix), temp_dirs(prefix)
    assert not cgroups(prefix), cgroups(prefix)
    assert len(roots) == 20 and all(root.name.startswith(prefix) for root in roots)
    assert [text.count("No space left") for text in outputs if "filled" in text] == [3] * 5, outputs  # capped
    assert time.monotonic() - started < 90
