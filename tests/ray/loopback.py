"""A real two-node Ray cluster on this machine, every process of it on 127.0.0.1.

Two ``ray start --block`` nodes (a head and a worker), each in its own session and temp dir,
with their own ports (chosen free), one CPU each and a custom resource naming the node.
Token authentication is on, with a fresh token given to every Ray process by environment
(``RAY_AUTH_MODE=token``, ``RAY_AUTH_TOKEN``): nothing is written to ``~/.ray``.

Ray binds and dials the machine's own address unless told otherwise; what keeps it here:

- ``--node-ip-address=127.0.0.1`` on both nodes, with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` in
  every node's environment (without it Ray replaces a loopback node address by the machine's);
- the worker node started through ``ray_start_loopback.py`` (why: its docstring);
- drivers pinned by :func:`omnienv.ray.connect` when the address they join is a loopback one.

Each node runs in a session of its own (``start_new_session``): its raylet, agents and workers
(Ray gives each worker a process group of its own, but not a session). A node is lost by
``SIGKILL`` to every process of its session (no goodbye to the GCS, as when a machine dies);
:meth:`stop` ends both the same way, and :meth:`leftovers` finds anything still alive.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tests.net import free_port

RAY = str(Path(sys.executable).with_name("ray"))
NODE_START = str(Path(__file__).with_name("ray_start_loopback.py"))
LOOPBACK = frozenset({"127.0.0.1", "::ffff:127.0.0.1"})
STARTED = "Ray runtime started."

FAST_NODE_DEATH = {
    # The GCS declares a node dead after this many failed health checks, this often: within a
    # second of its raylet dying (a dead raylet refuses the check at once) instead of Ray's
    # default 15 s, so that a lost node's sessions fail at once. A live raylet that is slow to
    # answer (a CI machine's two busy cores stalled one for seconds as it started, and 300 ms
    # timeouts had it declared dead) gets the long timeout before a check counts as failed.
    "RAY_health_check_initial_delay_ms": "0",
    "RAY_health_check_period_ms": "300",
    "RAY_health_check_timeout_ms": "30000",
    "RAY_health_check_failure_threshold": "3",
}


@dataclass
class Node:
    name: str
    temp_dir: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class LoopbackCluster:
    """Start with :meth:`start`; always :meth:`stop` (a ``with`` block does)."""

    token: str = field(default_factory=lambda: secrets.token_hex(32))
    gcs_port: int = field(default_factory=free_port)
    nodes: dict[str, Node] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    def environment(self, **extra: str) -> dict[str, str]:
        """The environment of a process that talks to this cluster: its token, no other Ray
        setting inherited from this process (no ``RAY_ADDRESS``, no other auth mode)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token, "RAY_USAGE_STATS_ENABLED": "0", **extra})
        return env

    def start(self, timeout: float = 90.0) -> None:
        """Start the head, then the worker as soon as the head's GCS answers; return once both
        say they are up (``ray start`` says so after the node registered with the GCS)."""
        deadline = time.monotonic() + timeout
        head = self._start_node(
            "head",
            [RAY, "start", "--head", f"--port={self.gcs_port}", "--include-dashboard=false"],
            FAST_NODE_DEATH,
        )
        while not _accepts(self.gcs_port):
            self._check(head, deadline)
            time.sleep(0.05)
        worker = self._start_node("worker", [sys.executable, NODE_START, "start", f"--address={self.address}"], {})
        for node in (head, worker):
            while STARTED not in node.output():
                self._check(node, deadline)
                time.sleep(0.05)

    def _start_node(self, name: str, command: list[str], extra_env: dict[str, str]) -> Node:
        temp_dir = tempfile.mkdtemp(prefix=f"omr{name[0]}-")  # Ray's socket paths must stay short
        log = Path(temp_dir) / "ray-start.log"
        args = [
            *command,
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--temp-dir={temp_dir}",
            "--num-cpus=1",
            "--num-gpus=0",
            f'--resources={{"node_{name}": 1}}',
            "--object-store-memory=80000000",
            f"--node-manager-port={free_port()}",
            f"--object-manager-port={free_port()}",
            "--min-worker-port=0",
            "--max-worker-port=0",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            "--disable-usage-stats",
        ]
        env = self.environment(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", **extra_env)
        with open(log, "ab") as out:
            process = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True, preexec_fn=die_with_parent
            )
        node = self.nodes[name] = Node(name, temp_dir, process, log)
        return node

    def _check(self, node: Node, deadline: float) -> None:
        if node.process.poll() is not None:
            raise RuntimeError(f"the {node.name} node exited with {node.process.returncode}:\n{node.output()[-3000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the {node.name} node did not start in time:\n{node.output()[-3000:]}")

    # -- what runs, and where it talks --------------------------------------------------------

    def processes(self, *extra_sessions: int) -> list[psutil.Process]:
        """Every live process of the nodes' sessions (and of ``extra_sessions``: other processes
        started with ``start_new_session``), and any other one whose command line names one of the
        nodes' temp dirs. Sessions, not process groups: Ray puts each worker in a group of its own."""
        sessions = {node.process.pid for node in self.nodes.values()} | set(extra_sessions)
        dirs = [node.temp_dir for node in self.nodes.values()]
        found = []
        for process in psutil.process_iter(["cmdline", "status"]):
            try:
                if process.info["status"] == psutil.STATUS_ZOMBIE:
                    continue
                command = " ".join(process.info["cmdline"] or ())
                if os.getsid(process.pid) in sessions or any(d in command for d in dirs):
                    found.append(process)
            except (psutil.Error, ProcessLookupError):
                continue
        return found

    def watch(self, every: float = 0.2) -> SocketWatch:
        """Sample the sockets of every process of the nodes (and of the sessions the watch is
        told to :meth:`~SocketWatch.follow`) until the returned watch is stopped (``with``)."""
        return SocketWatch(lambda sessions: {p.pid for p in self.processes(*sessions)}, every)

    # -- losing and stopping nodes ------------------------------------------------------------

    def kill(self, name: str, timeout: float = 30.0) -> None:
        """Lose a node at once: ``SIGKILL`` to every process of its session (no goodbye to the
        GCS, as when a machine dies), then reap its ``ray start``."""
        node = self.nodes[name]
        _signal_session(node.process.pid, signal.SIGKILL)
        node.process.wait(timeout)
        _wait_session_gone(node.process.pid, timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop both nodes the way :meth:`kill` loses one (Ray's graceful stop takes its GCS and
        raylets 10 to 20 s here, and nothing of a test cluster needs saving), reap them and remove
        their temp dirs. Safe to call twice and after a failed start."""
        for name in self.nodes:
            self.kill(name, timeout)
        for node in self.nodes.values():
            shutil.rmtree(node.temp_dir, ignore_errors=True)

    def leftovers(self, *extra_sessions: int) -> list[str]:
        return [f"pid {p.pid}: {' '.join(p.cmdline())[:160]}" for p in self.processes(*extra_sessions)]

    def __enter__(self) -> LoopbackCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass(frozen=True)
class Socket:
    pid: int
    kind: str
    status: str
    local: tuple[str, int] | None
    remote: tuple[str, int] | None

    @property
    def loopback(self) -> bool:
        return all(end is None or end[0] in LOOPBACK for end in (self.local, self.remote))


class SocketWatch:
    """Every inet socket (TCP and UDP, v4 and v6) that the watched processes held at any of the
    samples taken every ``every`` seconds in a background thread: one system-wide read of the
    kernel's socket tables per sample, kept for the processes watched at that moment."""

    def __init__(self, pids: Callable[[set[int]], set[int]], every: float) -> None:
        self.pids = pids
        self.sessions: set[int] = set()
        self.every = every
        self.seen: set[Socket] = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="socket-watch", daemon=True)

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.every):
                return

    def follow(self, *sessions: int) -> None:
        """Watch the processes of these sessions too (processes started with ``start_new_session``)."""
        self.sessions.update(sessions)

    def sample(self) -> None:
        pids = self.pids(set(self.sessions))
        for conn in psutil.net_connections(kind="inet"):
            if conn.pid in pids:
                kind = "udp" if conn.type == socket.SOCK_DGRAM else "tcp"
                local = (conn.laddr.ip, conn.laddr.port) if conn.laddr else None
                remote = (conn.raddr.ip, conn.raddr.port) if conn.raddr else None
                self.seen.add(Socket(conn.pid, kind, conn.status, local, remote))
        self.samples += 1

    @property
    def foreign(self) -> list[Socket]:
        """The sockets that listened on or connected to anything but 127.0.0.1."""
        return sorted((s for s in self.seen if not s.loopback), key=repr)

    def __enter__(self) -> SocketWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()  # and once more at the end


def die_with_parent() -> None:
    """``preexec_fn``: the child gets ``SIGKILL`` when this process dies, however it dies. For a
    ``ray start --block`` node that takes the whole node down: its reaper then kills the rest."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


def session_processes(sid: int) -> list[int]:
    """The live processes of session ``sid`` (zombies, being reaped, do not count)."""
    found = []
    for process in psutil.process_iter(["status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and os.getsid(process.pid) == sid:
                found.append(process.pid)
        except (psutil.Error, ProcessLookupError):
            continue
    return found


def _signal_session(sid: int, sig: signal.Signals) -> None:
    for pid in session_processes(sid):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _wait_session_gone(sid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while alive := session_processes(sid):
        if time.monotonic() > deadline:
            raise TimeoutError(f"processes {alive} of session {sid} are still alive after {timeout:g} s")
        time.sleep(0.05)
