"""What the ``--workers`` tests share: a real ``--workers 2`` server, and the checks on its replies.

The routing tests (test_workers.py) and the start-and-stop tests (test_worker_lifecycle.py) start
the same servers and look at the same processes, so both take them from here rather than one
importing the other's tests.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from omnienv.core import ToolResult, tool
from omnienv.envs.echo import Echo
from omnienv.server.workers import WorkerPlace
from tests.polling import eventually

OMNIENV = str(Path(sys.executable).with_name("omnienv"))
RULE = WorkerPlace(0, 2, "")
"""The routing rule as every worker computes it: ``RULE.owner(name)``."""
TOKEN = "operator-secret"


class Holding(Echo):
    """Echo with a tool that holds its worker's event loop (a sync call with ``blocking = False``
    runs on it), as a deadlocked or runaway environment call would; served as ``HOLDING``."""

    name = "holding"

    @tool
    def hold(self, seconds: float) -> ToolResult:
        """Hold the event loop.

        Args:
            seconds: How long.
        """
        time.sleep(seconds)
        return ToolResult.of("held")


HOLDING = f"{__name__}:Holding"


@dataclass
class Server:
    """A ``--workers 2`` server; ``served[name]`` collects the workers each session's replies came from."""

    proc: subprocess.Popen[bytes]
    url: str
    log: Path
    served: dict[str, set[int]] = field(default_factory=dict)
    forwarded: dict[str, int] = field(default_factory=dict)

    def note(self, name: str, headers: Any) -> None:
        """Record which worker answered a request for session ``name``, and whether it was forwarded."""
        self.served.setdefault(name, set()).add(int(headers["x-omnienv-worker"]))
        self.forwarded[name] = self.forwarded.get(name, 0) + ("x-omnienv-via" in headers)

    def client(self, **options: Any) -> httpx.Client:
        """A client that opens a new connection per request, so each lands on either worker."""
        return httpx.Client(base_url=self.url, timeout=30, limits=httpx.Limits(max_keepalive_connections=0), **options)

    def workers(self) -> dict[int, int]:
        """``{index: pid}`` of both workers, from their /health."""
        seen: dict[int, int] = {}

        def both() -> bool:
            health = httpx.get(f"{self.url}/health", timeout=5).json()
            seen[health["worker"]] = health["pid"]
            return len(seen) == 2

        eventually(both, timeout=20, what="both workers answering /health")
        return seen


@contextmanager
def server(
    *options: str, env: dict[str, str] | None = None, lean: bool = False, serving: str = "wordle"
) -> Iterator[Server]:
    """``omnienv serve wordle --workers 2`` (``lean``: ``python -m omnienv.app``; ``serving``:
    another environment) on a port of its choosing, which it prints; killed with its process
    group at the end."""
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"omnienv-workers-test-{os.getpid()}-{id(options)}.log"
    command = [sys.executable, "-m", "omnienv.app"] if lean else [OMNIENV, "serve", "--no-ui"]
    command += [serving, "--workers", "2", "--port", "0", *options]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        port: list[str] = []

        def healthy() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"the server exited with {proc.returncode}: {log.read_text()}")
            if not port:
                port.extend(re.findall(r"http://127\.0\.0\.1:(\d+)", log.read_text())[:1])
                return False
            try:
                return httpx.get(f"http://127.0.0.1:{port[0]}/health", timeout=5).status_code == 200
            except httpx.TransportError:
                return False

        eventually(healthy, timeout=60, what="the server healthy")
        yield Server(proc, f"http://127.0.0.1:{port[0]}", log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
        proc.wait(30)
        log.unlink(missing_ok=True)


def alive(pid: int) -> bool:
    """Whether any thread of process ``pid`` runs (a zombie nobody reaped yet does not). Every
    thread counts: a killed process's main thread turns zombie first, and its files (its
    listening sockets) are closed only when the last of its threads has exited."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return False
    for thread in threads:
        try:
            state = Path(f"/proc/{pid}/task/{thread}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state not in ("Z", "X"):
            return True
    return False


def check_owners(srv: Server, names: list[str]) -> None:
    """Every reply for each session came from its owner alone, both workers own some, and some
    requests reached a worker that is not the owner and were forwarded."""
    assert names
    for name in names:
        assert srv.served[name] == {RULE.owner(name)}, (name, srv.served[name])
    assert {RULE.owner(name) for name in names} == {0, 1}
    assert sum(srv.forwarded[name] for name in names) > 0, "every request landed on its owner: none forwarded"


def ids_on_both_workers(make: Callable[[], str], tries: int = 40, least: int = 4) -> list[str]:
    """Session names from ``make()`` until there are ``least`` and both workers own one
    (connections land at random)."""
    names: list[str] = []
    while len(names) < least or {RULE.owner(n) for n in names} != {0, 1}:
        assert len(names) < tries, f"every one of {len(names)} sessions landed on one worker"
        names.append(make())
    return names


def sse_events(reply: httpx.Response) -> list[tuple[str, str]]:
    events = re.findall(r"event: *(\S+)\r?\ndata: *(.*)", reply.text)
    assert events, reply.text
    return events
