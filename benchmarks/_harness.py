"""What the server benchmarks share: start a server process, wait for /health, read its RSS and CPU.

Servers run as child processes (each in its own process group, reaped on exit even after an
error) so that their memory and CPU time can be read from /proc without counting the client.
They run with bytecode caching on, as a ``pip install`` leaves a package (compiled), even where
``PYTHONDONTWRITEBYTECODE`` is set: with it, every start compiles every module from source again,
which on a 2-core machine doubles any Python server's start-up and measures the setting, not the
server.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MACHINE_CPUS",
    "OMNIENV",
    "OPENENV_PYTHON",
    "ROOT",
    "ServerProcess",
    "cpu_ticks",
    "free_port",
    "percentile",
    "pin_self",
    "raise_fd_limit",
    "server_and_client_cpus",
]

ROOT = Path(__file__).resolve().parents[1]
OMNIENV = str(Path(sys.executable).with_name("omnienv"))
OPENENV_PYTHON = ROOT / ".venvs" / "openenv" / "bin" / "python"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_ticks(pid: int) -> int:
    """User plus system CPU time ``pid`` used so far, in clock ticks; OSError once it is gone."""
    fields = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()
    return int(fields[11]) + int(fields[12])


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted sequence; NaN when empty."""
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


MACHINE_CPUS = tuple(sorted(os.sched_getaffinity(0)))
"""The CPUs this process may run on, read once at import: after :func:`pin_self`, the process's
own affinity is one CPU, which would hide the others from the servers it then starts."""


def server_and_client_cpus() -> tuple[int | None, int | None]:
    """A CPU for the server and another for the client; (None, None) on a one-CPU machine, where
    both share it unpinned."""
    if len(MACHINE_CPUS) < 2:
        return None, None
    return MACHINE_CPUS[0], MACHINE_CPUS[1]


def pin_self(cpu: int | None) -> None:
    if cpu is not None and cpu in MACHINE_CPUS:
        os.sched_setaffinity(0, {cpu})


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's open-file limit (children inherit it); returns the new soft limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1.0) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@dataclass
class ServerProcess:
    """One server under test. ``port=0`` means the server prints ``PORT n`` after binding itself."""

    name: str
    cmd: list[str]
    port: int = 0
    cpu: int | None = None
    startup_s: float = float("nan")
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._announces_port = self.port == 0
        self._log: Path | None = None

    def start(self, deadline_s: float = 60.0) -> ServerProcess:
        """Spawn, then poll (never sleep blindly) until /health answers; output goes to a file, not a pipe
        nobody drains."""
        cpu = self.cpu if self.cpu in MACHINE_CPUS else None
        fd, log = tempfile.mkstemp(prefix=f"omnienv-bench-{self.name}-", suffix=".log")
        os.close(fd)
        self._log = Path(log)
        if self._announces_port:
            self.port = 0
        t0 = time.perf_counter()
        with open(log, "ab") as out:  # append mode: the child writes at the end whatever we read
            self.proc = subprocess.Popen(
                self.cmd,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None,
            )
        try:
            end = t0 + deadline_s
            while not (self.port and _healthy(self.port)):
                if not self.port:
                    match = re.search(r"^PORT (\d+)", self.output(), re.MULTILINE)
                    self.port = int(match.group(1)) if match else 0
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: {self.output()[-2000:]}")
                if time.perf_counter() > end:
                    raise RuntimeError(f"{self.name} not healthy within {deadline_s} s: {self.output()[-2000:]}")
                time.sleep(0.002)
            self.startup_s = time.perf_counter() - t0
            if cpu is not None and os.sched_getaffinity(self.proc.pid) != {cpu}:
                raise RuntimeError(f"{self.name} runs on CPUs {sorted(os.sched_getaffinity(self.proc.pid))}, not {cpu}")
        except BaseException:
            self.stop()
            raise
        return self

    def output(self) -> str:
        """Everything the server printed so far."""
        return self._log.read_text(errors="replace") if self._log and self._log.exists() else ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss_kb(self) -> int:
        """Resident memory of the server process in KiB (VmRSS)."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]

    def threads(self) -> int:
        status = Path(f"/proc/{self.pid}/status").read_text()
        return int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]

    def cpu_s(self) -> float:
        """User plus system CPU seconds the server has used so far."""
        return cpu_ticks(self.pid) / CLK_TCK

    def stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        if self._log is not None:
            self._log.unlink(missing_ok=True)

    def __enter__(self) -> ServerProcess:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
