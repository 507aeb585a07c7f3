"""Attacking a served Jupyter notebook as an agent would: tool calls over the WebSocket only.

Every test starts a real server in-process (``running(create_app(...))``) on a kernel pool of its
own (real bubblewrap, real ipykernel), and the "agent" is a :class:`WebSocketClient` that only
calls tools. What the host shows afterwards (processes, files, mounts, cgroups, the server's
memory) is read straight from the host.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from omnienv.app import create_app
from omnienv.client import WebSocketClient
from omnienv.core import StepResult, ToolCall
from omnienv.envs.jupyter import Jupyter
from omnienv.sandboxes.bubblewrap import Limits
from omnienv.sandboxes.cgroups import probe
from omnienv.sandboxes.jupyter import KernelPool
from omnienv.server import running

needs_bwrap = pytest.mark.skipif(not os.path.exists("/usr/bin/bwrap"), reason="bubblewrap missing")
needs_memory_cgroup = pytest.mark.skipif(
    "memory" not in probe().parents,
    reason="no writable memory cgroup here: the sandbox's total memory is not enforced "
    "(docs/security.md, 'Limits of the Jupyter sandbox')",
)
needs_process_limit = pytest.mark.skipif(
    os.geteuid() == 0 and "pids" not in probe().parents,
    reason="no writable pids cgroup, and RLIMIT_NPROC does not bind a sandbox mapped to root: "
    "nothing limits its processes here (docs/security.md, 'Limits of the Jupyter sandbox')",
)
CAN_MOUNT = os.geteuid() == 0
"""Whether work dirs get their size-capped tmpfs (mounting needs root or CAP_SYS_ADMIN)."""


def jupyter_class(pool: KernelPool, cell_timeout: float) -> type[Jupyter]:
    """A Jupyter whose sessions take kernels from ``pool`` (a server builds envs without arguments)."""

    class PooledJupyter(Jupyter):
        name = "jupyter"

        def __init__(self) -> None:
            super().__init__(pool=pool, cell_timeout=cell_timeout)

    return PooledJupyter


@contextmanager
def served_jupyter(
    limits: Limits | None = None,
    *,
    size: int = 1,
    cell_timeout: float = 30.0,
    base_dir: str | None = None,
    **config: Any,
) -> Iterator[tuple[str, KernelPool]]:
    """A Jupyter server on a free port and its pool; the pool and the server always stop."""
    pool = KernelPool(size, limits=limits, base_dir=base_dir)
    try:
        with running(create_app(jupyter_class(pool, cell_timeout), **config)) as url:
            yield url, pool
    finally:
        pool.close()


class Agent:
    """One session, driven through the tools alone."""

    def __init__(self, url: str) -> None:
        self.client = WebSocketClient.connect(url, timeout=300)

    def reset(self, task: str = "train/fib_mod-0") -> str:
        return self.client.reset(task).text

    def run(self, code: str) -> StepResult:
        return self.client.step(ToolCall("add_and_execute_code_cell", {"code": code}))

    def shell(self, command: str) -> StepResult:
        return self.client.step(ToolCall("execute_shell_command", {"command": command}))

    def answer(self, value: str) -> StepResult:
        return self.client.step(ToolCall("final_answer", {"answer": value}))

    def close(self) -> None:
        self.client.close()


@contextmanager
def agent(url: str, task: str = "train/fib_mod-0") -> Iterator[Agent]:
    player = Agent(url)
    try:
        player.reset(task)
        yield player
    finally:
        player.close()


def host_pids_mentioning(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def assert_scored_end(result: StepResult, reasons: tuple[str, ...]) -> None:
    """The agent's own doing: the episode ends, is scored (0 without an answer), and is not masked."""
    assert result.failure is None, result.failure
    assert result.done and not result.truncated, result
    assert result.reward == 0.0 and result.info.get("rubric") == {"correct": 0.0, "efficiency": 0.0}, result.info
    assert result.info.get("ended_by_agent", {}).get("reason") in reasons, result.info
