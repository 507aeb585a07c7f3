"""Fifty served episodes, each trying to outlive itself; afterwards nothing of theirs is left on the host."""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import uuid

from omnienv.sandboxes.bubblewrap import Limits
from tests.security._jupyter import Agent, host_pids_mentioning, needs_bwrap, needs_process_limit, served_jupyter

pytestmark = [needs_bwrap, needs_process_limit]

MiB = 1 << 20
LIMITS = Limits(
    processes=48,
    total_processes=64,
    total_memory_bytes=320 * MiB,
    work_bytes=16 * MiB,
    shm_bytes=8 * MiB,
    tmp_bytes=16 * MiB,
)
EPISODES = 50


KERNEL_FORK_BOMB = "import os\nwhile True:\n    os.fork()"  # copies of the kernel itself (slow: once only)


def escapes(marker: str) -> list[str]:
    return [
        # a fork bomb left running when the cell ends, stopped by the process limit and then killed
        "import subprocess, time\nsubprocess.Popen(['sh', '-c', 'b() { b | b & }; b'])\ntime.sleep(0.5)",
        # a daemon that leaves the kernel's session and process group, and a double-forked one
        "import subprocess\n"
        f"subprocess.Popen(['setsid', 'sh', '-c', 'sleep 600; : {marker}'])\n"
        f"subprocess.Popen(['sh', '-c', '(sleep 600; : {marker}) & exit 0'], start_new_session=True)",
        # memory spread over processes, beyond the sandbox's total
        "import subprocess, sys\n"
        "procs = [subprocess.Popen([sys.executable, '-c', \"x = b'1' * (120 << 20); import time; time.sleep(60)\"])"
        " for _ in range(4)]",
        # the disks: work dir, /tmp and /dev/shm, to the last byte
        "for d in ('.', '/tmp', '/dev/shm'):\n"
        "    try:\n"
        "        with open(f'{d}/fill', 'wb') as f:\n"
        "            while True:\n"
        "                f.write(b'x' * (1 << 20))\n"
        "    except OSError:\n"
        "        pass",
    ]


def _cgroups(names: set[str]) -> list[str]:
    return [path for name in names for path in glob.glob(f"/sys/fs/cgroup/*/omnienv/{name}")]


def test_fifty_escaping_episodes_leave_no_process_mount_file_or_cgroup() -> None:
    marker = f"leak-{uuid.uuid4().hex[:10]}"
    base = tempfile.mkdtemp(prefix="oj-leaks-")
    attempts = escapes(marker)
    seen: set[str] = set()
    try:
        with served_jupyter(LIMITS, size=2, cell_timeout=5, base_dir=base) as (url, _):
            player = Agent(url)
            try:
                for episode in range(EPISODES):
                    player.reset(f"train/fib_mod-{episode % 3}")
                    result = player.run(KERNEL_FORK_BOMB if episode == 0 else attempts[episode % len(attempts)])
                    assert result.failure is None, (episode, result)
                    if not result.done:
                        player.answer("0")
                    seen.update(os.listdir(base))
            finally:
                player.close()
        assert seen, "no sandbox was ever made under the base directory"
        assert host_pids_mentioning(marker) == [] and host_pids_mentioning(base) == []
        with open("/proc/self/mounts") as f:
            assert [line for line in f if base in line] == []
        assert os.listdir(base) == []
        assert _cgroups(seen) == []
    finally:
        for pid in host_pids_mentioning(marker) + host_pids_mentioning(base):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        shutil.rmtree(base, ignore_errors=True)
