"""A hostile agent pushes past its limits: memory over many processes, disks, background processes, outputs."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest

from omnienv.sandboxes.bubblewrap import Limits
from tests.security._jupyter import (
    CAN_MOUNT,
    Agent,
    agent,
    host_pids_mentioning,
    needs_bwrap,
    needs_memory_cgroup,
    served_jupyter,
)

pytestmark = needs_bwrap

MiB = 1 << 20
LIMITS = Limits(total_memory_bytes=1024 * MiB, work_bytes=96 * MiB, shm_bytes=24 * MiB, tmp_bytes=32 * MiB)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with served_jupyter(LIMITS, size=2, cell_timeout=30) as (url, _):
        yield url


SPREAD = r"""
import select, subprocess, sys, time
child = "import sys, time\nx = b'1' * (400 << 20)\nprint('held', flush=True)\ntime.sleep(60)"
procs = [subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE) for _ in range(5)]
waiting = {p.stdout.fileno(): p for p in procs}
holding, deadline = [], time.monotonic() + 20
while waiting and time.monotonic() < deadline:
    ready, _, _ = select.select(list(waiting), [], [], 0.5)
    for fd in ready:
        p = waiting.pop(fd)
        if p.stdout.readline():  # a line once it holds its memory, or EOF when it was killed first
            holding.append(p)
time.sleep(1)  # let the OOM killer finish: a process may be killed after it said it held
held = sum(p.poll() is None for p in holding)  # the ones holding 400 MiB each at the same time, now
for p in procs:
    p.kill()
    p.wait()
print(f"held {held} of 5")
"""


@needs_memory_cgroup
def test_memory_spread_over_five_processes_is_stopped_at_the_sandboxs_total(url: str) -> None:
    with agent(url) as player:
        result = player.run(SPREAD)
        assert result.failure is None and not result.done, result
        held = int(re.search(r"held (\d) of 5", result.observation.text).group(1))  # type: ignore[union-attr]
        assert held <= 2, result.observation.text  # 1 GiB for the whole sandbox: two of 400 MiB at most
        assert player.run("print('alive')").observation.text == "alive"


FILL = r"""
import errno, os
def fill(directory, files, chunk=8 << 20):
    written = 0
    try:
        for i in range(files):
            with open(os.path.join(directory, f"fill-{i}"), "wb") as f:
                for _ in range(4):
                    f.write(b"x" * chunk)
                    f.flush()
                    written += chunk
    except OSError as exc:
        return written >> 20, errno.errorcode.get(exc.errno)
    return written >> 20, None
for directory in ("/dev/shm", "/tmp", "."):
    print(directory, *fill(directory, 8))
"""


def test_dev_shm_tmp_and_the_work_dir_are_capped(url: str) -> None:
    with agent(url) as player:
        result = player.run(FILL)
        assert result.failure is None, result
        sizes = {line.split()[0]: line.split()[1:] for line in result.observation.text.splitlines()}
        capped = (("/dev/shm", 24), ("/tmp", 32), *((".", 96),) * CAN_MOUNT)  # the work dir's tmpfs needs root
        for directory, cap in capped:
            written, error = sizes[directory]
            assert int(written) <= cap and error == "ENOSPC", (directory, result.observation.text)


def test_background_processes_are_gone_after_each_cell_and_after_the_time_limit() -> None:
    marker = f"omnienv-escapee-{uuid.uuid4().hex[:8]}"
    daemon = f"while True: pass  # {marker}-a"
    with served_jupyter(LIMITS, cell_timeout=3) as (url, _), agent(url) as player:
        started = player.run(
            "import subprocess, sys\n"
            f"subprocess.Popen(['sh', '-c', 'sleep 1000; : {marker}-0'])\n"
            f"subprocess.Popen([sys.executable, '-c', {daemon!r}], start_new_session=True)\n"
            f"subprocess.Popen(['sh', '-c', '(setsid sh -c \"sleep 1000; : {marker}-b\" &) ; true'])\n"
            "print('started')"
        )
        assert started.observation.text.startswith("started\n") and "were stopped" in started.observation.text
        assert host_pids_mentioning(marker) == []  # gone as soon as the cell has ended
        timed_out = player.run(
            "import subprocess, sys, time\n"
            f"subprocess.Popen([sys.executable, '-c', 'while True: pass  # {marker}-c'], start_new_session=True)\n"
            "time.sleep(60)"
        )
        assert "time limit" in timed_out.observation.text and timed_out.failure is None, timed_out
        assert host_pids_mentioning(marker) == []
        listed = player.run(  # what is left of the killed ones are zombies until the kernel reaps them
            "import os\nsorted(int(p) for p in os.listdir('/proc') if p.isdigit() and "
            "open(f'/proc/{p}/stat').read().rpartition(')')[2].split()[0] != 'Z')"
        )
        assert listed.observation.text == "Out[3]: [1, 2]", listed.observation.text  # the namespace's init, the kernel


def _peak_rss_growth(player: Agent, code: str) -> tuple[int, str]:
    """How far this process's resident memory (the server's, in-process) rose while ``code`` ran."""
    with open("/proc/self/status") as f:
        before = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))  # type: ignore[union-attr]
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM, the peak
    result = player.run(code)
    with open("/proc/self/status") as f:
        peak = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))  # type: ignore[union-attr]
    assert result.failure is None, result
    return (peak - before) * 1024, result.observation.text


HUGE = {
    "print": "print('x' * 50_000_000)",
    "display_data": "from IPython.display import display\ndisplay({'text/plain': 'y' * 50_000_000}, raw=True)",
    "image": "from IPython.display import display\ndisplay({'image/png': 'A' * 50_000_000}, raw=True)",
    "error": "raise ValueError('z' * 50_000_000)",
    "raw_send": (  # around the kernel's own limits: straight onto the iopub socket
        "from jupyter_client.session import Session\nk = get_ipython().kernel\n"
        "Session.send(k.session, k.iopub_socket, 'display_data', {'data': {'text/plain': 'w' * 50_000_000}, "
        "'metadata': {}, 'transient': {}}, parent=k.get_parent('shell'))"
    ),
}


@pytest.mark.parametrize("kind", list(HUGE))
def test_a_50_mb_output_never_reaches_the_servers_memory(url: str, kind: str) -> None:
    with agent(url) as player:
        player.run("print(1)")  # warm: the client, the collector and the codecs are loaded
        growth, text = _peak_rss_growth(player, HUGE[kind])
        assert growth < 20 * MiB, (kind, growth / MiB)
        assert len(text) < 20_000, kind
