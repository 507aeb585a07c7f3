"""Jupyter: kernels from the warm pool, cells alone and at 1, 8 and 32 concurrent sessions.

Measured side by side in one run:

- reset: ``Jupyter.reset`` of a task with files, a sandboxed kernel waiting in the pool, against
  the raw way to get a kernel: ``jupyter_client.KernelManager.start_kernel`` + ``wait_for_ready``
  (no sandbox, TCP on 127.0.0.1), and against our own cold start (bubblewrap + kernel, no pool);
- ``print(1)``: ``Jupyter.step(add_and_execute_code_cell)`` against a bare
  ``BlockingKernelClient.execute`` + iopub read on the raw kernel (the floor: no sandbox, no
  bookkeeping);
- pool refill: a ``KernelPool`` of ``--refill`` kernels, drained at once; the time until its own
  ``ready`` count is back to full (sandboxed kernels made per second, with the pool's 2 workers);
- throughput: N sessions (``--levels``, default 1, 8, 32), each a ``Jupyter`` environment on its
  own sandboxed kernel, each running the cell ``x += 1`` in a closed loop on one event loop (as a
  server drives them): cells per second, per-cell p50/p99, the ratio to 1 session, and against N
  raw kernels (no sandbox, each with its own IPython directory in memory, as ours have) driven
  the same way by bare ``AsyncKernelClient`` loops, ours and theirs taking turns at each level.
  A cell costs about 1.6-2 ms of this process's CPU and 4-6 ms of its kernel's (a raw kernel and
  bare client: about 1.2-1.8 and 3.9-5 ms), so on a 2-core machine the rate stops growing
  after a few sessions (a few hundred cells/s) and latency grows with the queue; the CPU columns
  show it;
- the most sessions held: the same loop at 1, 2, 4, ... up to ``--max-sessions-cap``; a level
  passes when every session ran cells with no error, no failure flag and none slower than
  ``--deadline``. Memory per session is PSS (and RSS) summed over the session's processes
  (bubblewrap, the namespace's init, the kernel) at the highest level passed. Each session holds
  about 12 open files in this process, so 128 sessions hold more than 1024 (kernels start through
  ``poll``, not ``select``, for that reason: see ``omnienv.sandboxes.polling``);
- cleanup: every process of every session and pool is checked gone after close.

Targets: reset p50 <= 100 ms from the pool; ``print(1)`` p50 <= 10 ms; the rest is reported.
(benchmarks/_sandboxed.py describes the closed loop and the memory figures.)

    python benchmarks/jupyter.py [--quick] [--levels 1,8,32] [--duration 8] [--max-sessions-cap 128]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._sandboxed import (
    Ramp,
    Session,
    Sessions,
    StepFailed,
    Timing,
    describe_machine,
    parse_ramp_args,
    ramp,
    ramp_parser,
    wide_console,
)
from benchmarks._sandboxed_tables import (
    Verdicts,
    add_cleanup_row,
    add_ramp_rows,
    levels_table,
    samples_table,
    stats,
)
from omnienv.core import ToolCall
from omnienv.envs.jupyter import Jupyter
from omnienv.sandboxes.jupyter import JupyterSandbox, KernelPool, SandboxedKernel

__all__ = ["main"]

MEMORY_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else None


@contextlib.contextmanager
def raw_kernel_env() -> Iterator[dict[str, str]]:
    """A raw kernel's environment: its own IPython directory in memory, as each sandboxed kernel has
    (a private /tmp). Kernels sharing ~/.ipython would write one history database on the disk, and
    at N sessions wait on each other's locks of it."""
    ipython_dir = tempfile.mkdtemp(prefix="omnienv-bench-ipython-", dir=MEMORY_DIR)
    try:
        yield {**os.environ, "IPYTHONDIR": ipython_dir}
    finally:
        shutil.rmtree(ipython_dir, ignore_errors=True)


def raw_kernel_starts(n: int) -> list[float]:
    from jupyter_client import KernelManager

    times = []
    for _ in range(n):
        manager = KernelManager(kernel_name="python3")
        started = time.perf_counter()
        with raw_kernel_env() as env:
            manager.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            client = manager.client()
            client.start_channels()
            client.wait_for_ready(timeout=60)
            times.append(time.perf_counter() - started)
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    return times


def cold_starts(n: int) -> list[float]:
    times = []
    for _ in range(n):
        kernel = SandboxedKernel()
        started = time.perf_counter()
        try:
            kernel.start()
            times.append(time.perf_counter() - started)
        finally:
            kernel.kill()
    return times


def raw_print_calls(n: int) -> list[float]:
    with raw_kernel_env() as env:
        return _raw_print_calls(n, env)


def _raw_print_calls(n: int, env: dict[str, str]) -> list[float]:
    from jupyter_client import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        times = []
        for _ in range(n):
            started = time.perf_counter()
            msg_id = client.execute("print(1)")
            while True:
                msg = client.get_iopub_msg(timeout=10)
                if (
                    msg["parent_header"].get("msg_id") == msg_id
                    and msg["msg_type"] == "status"
                    and msg["content"]["execution_state"] == "idle"
                ):
                    break
            client.get_shell_msg(timeout=10)
            times.append(time.perf_counter() - started)
        return times
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


async def env_resets(pool: KernelPool, n: int) -> tuple[list[float], float]:
    env = Jupyter(pool=pool)
    times, waited = [], 0.0
    try:
        for i in range(n):
            started = time.perf_counter()
            while pool.ready < 1:  # measure a reset from the warm pool, not the pool's refill rate
                await asyncio.sleep(0.01)
            waited += time.perf_counter() - started
            started = time.perf_counter()
            await env.reset(f"test/sales_total-{3 + i % 2}")
            times.append(time.perf_counter() - started)
    finally:
        await env.close()
    return times, waited


async def env_print_calls(pool: KernelPool, n: int) -> list[float]:
    env = Jupyter(pool=pool)
    call = ToolCall("add_and_execute_code_cell", {"code": "print(1)"})
    times = []
    try:
        await env.reset("test/fib_mod-3")
        for _ in range(n):
            if (await env.state()).step_count >= (env.max_turns or 20) - 1:
                await env.reset("test/fib_mod-3")
            started = time.perf_counter()
            result = await env.step(call)
            times.append(time.perf_counter() - started)
            assert result.observation.text == "1", result.observation.text
    finally:
        await env.close()
    return times


class UnboundedJupyter(Jupyter):
    """The same environment without a turn limit, so one episode can run every cell of a level."""

    name = "jupyter"
    max_turns = 10**9  # no limit a benchmark can reach


async def run_cell(env: Jupyter, code: str, expected: str) -> None:
    """One step; anything but the expected output (a failure flag, an error, the end) is a failure."""
    result = await env.step(ToolCall("add_and_execute_code_cell", {"code": code}))
    if result.failure is not None:
        raise StepFailed(f"failure flag {result.failure.kind}: {result.failure.message}")
    if result.observation.is_error or result.over or result.observation.text != expected:
        raise StepFailed(f"unexpected result (over={result.over}): {result.observation.text[:200]}")


async def open_session(env: Jupyter) -> Session:
    """Reset from the pool and define ``x``; the session's step is then ``x += 1``."""
    await env.reset("test/fib_mod-3")
    await run_cell(env, "x = 0", "(no output)")

    def pids() -> set[int]:
        sandbox = env.sandbox
        return sandbox.kernel.pids() if isinstance(sandbox, JupyterSandbox) else set()

    return Session(lambda: run_cell(env, "x += 1", "(no output)"), pids)


def refill_rate(size: int) -> tuple[float, float]:
    """(kernels per second, seconds) for a drained pool of ``size`` to be full again, by its own count."""
    with KernelPool(size) as pool:
        if not wait_ready(pool, size, 180.0):
            raise RuntimeError(f"the pool did not fill {size} kernels in 180 s")
        held = [pool.try_acquire() for _ in range(size)]  # drained: the refill starts now
        started = time.perf_counter()
        if not wait_ready(pool, size, 180.0):
            raise RuntimeError(f"the pool did not refill {size} kernels in 180 s")
        elapsed = time.perf_counter() - started
        for kernel in held:
            if kernel is not None:
                pool.release(kernel)
    return size / elapsed, elapsed


def wait_ready(pool: KernelPool, count: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while pool.ready < count:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


class RawKernel:
    """The reference at N sessions: a plain ``ipykernel`` (no sandbox, TCP on 127.0.0.1) and its
    ``AsyncKernelClient``, the cell sent and its reply and idle status awaited as a bare client does."""

    def __init__(self) -> None:
        from jupyter_client import AsyncKernelManager

        self.manager = AsyncKernelManager(kernel_name="python3")
        self.client: Any = None
        self.cleanup = contextlib.ExitStack()
        self.env = self.cleanup.enter_context(raw_kernel_env())

    async def open(self) -> Session:
        await self.manager.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env)
        self.client = self.manager.client()
        self.client.start_channels()
        await self.client.wait_for_ready(timeout=60)
        await self.cell("x = 0")
        process = getattr(self.manager.provisioner, "process", None)
        return Session(lambda: self.cell("x += 1"), lambda: {process.pid} if process else set())

    async def cell(self, code: str) -> None:
        msg_id = self.client.execute(code)
        while True:
            msg = await self.client.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status":
                if msg["content"]["execution_state"] == "idle":
                    break
        while True:
            reply = await self.client.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        if reply["content"]["status"] != "ok":
            raise StepFailed(f"the raw kernel answered {reply['content']['status']}")

    async def close(self) -> None:
        try:
            if self.client is not None:
                self.client.stop_channels()
            if self.manager.has_kernel:
                await self.manager.shutdown_kernel(now=True)
        finally:
            self.cleanup.close()


async def concurrency(args: argparse.Namespace, console: Console, seen: set[int]) -> Ramp:
    """The levels and the ramp, the raw reference at the measured levels (see the module docs).

    Every kernel is killed however the benchmark ends: the sessions' environments are closed, then
    the pool, which kills every kernel it ever made.
    """
    pool = KernelPool(2)  # a served Jupyter's default pool size
    sessions = Sessions(lambda: UnboundedJupyter(pool=pool), open_session, parallel=4)
    raw = Sessions(RawKernel, RawKernel.open, parallel=4)
    timing = Timing(args.warmup, args.duration, args.check, args.deadline)
    try:
        return await ramp(
            sessions, args.levels, args.max_sessions_cap, timing, console, "cells", ("raw jupyter_client", raw)
        )
    finally:
        try:
            await raw.aclose()
            await sessions.aclose()
            seen.update(sessions.seen | raw.seen)
            seen.update(pid for kernel in pool.live_kernels() for pid in kernel.pids())
        finally:
            pool.close()


def main(argv: list[str] | None = None) -> None:
    parser = ramp_parser(__doc__.split("\n\n")[0], "cell")
    parser.add_argument("--resets", type=int, default=30)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--raw-starts", type=int, default=5)
    args = parse_ramp_args(parser, argv, resets=10, calls=100, raw_starts=2)
    console = wide_console()
    console.print(f"machine: {describe_machine()}")

    rows: list[tuple[str, list[float]]] = []
    measure: Callable[[str, list[float]], None] = lambda name, samples: rows.append((name, samples))  # noqa: E731
    measure("raw jupyter_client start (no sandbox)", raw_kernel_starts(args.raw_starts))
    measure("omnienv cold start (bwrap, no pool)", cold_starts(args.raw_starts))
    with KernelPool(3) as pool:
        resets, waited = asyncio.run(env_resets(pool, args.resets))
        measure("omnienv reset from the warm pool", resets)
        measure("raw print(1) (no sandbox)", raw_print_calls(args.calls))
        measure("omnienv print(1) step (sandboxed)", asyncio.run(env_print_calls(pool, args.calls)))
    refill_per_s, refill_s = refill_rate(args.refill)
    seen: set[int] = set()
    found = asyncio.run(concurrency(args, console, seen))

    console.print(samples_table("Jupyter: kernel acquisition and print(1) round trip (ms)", rows))
    raw_name = "raw jupyter_client"
    title = "Jupyter: x += 1 in N concurrent sessions, one kernel each"
    console.print(levels_table(found.run, args.levels, "cells", title, (raw_name, found.reference)))

    by_name = {name: stats(samples) for name, samples in rows}
    reset = by_name["omnienv reset from the warm pool"]
    raw_start = by_name["raw jupyter_client start (no sandbox)"]
    cold = by_name["omnienv cold start (bwrap, no pool)"]
    step = by_name["omnienv print(1) step (sandboxed)"]
    raw_step = by_name["raw print(1) (no sandbox)"]
    verdicts = Verdicts()
    verdicts.target(
        "reset p50 from the warm pool", reset[0], 100, note=f" ({reset[0] / raw_start[0]:.3f}x the raw kernel start)"
    )
    verdicts.report("raw jupyter_client kernel start p50 (no sandbox)", f"{raw_start[0]:.0f} ms", "reference")
    verdicts.report("omnienv cold start p50 (bwrap + kernel, no pool)", f"{cold[0]:.0f} ms", "reference")
    verdicts.target(
        "print(1) step p50 (sandboxed)",
        step[0],
        10,
        note=f" ({step[0] / raw_step[0]:.2f}x raw; p99 {step[1]:.2f} ms, {step[1] / raw_step[1]:.2f}x raw)",
    )
    verdicts.report("raw print(1) p50 (jupyter_client, no sandbox)", f"{raw_step[0]:.2f} ms", "reference")
    reference = ("raw jupyter_client", found.reference)
    add_ramp_rows(verdicts, found.run, found.held, args.levels, "cells", args.max_sessions_cap, reference)
    verdicts.report(
        f"pool refill (drained pool of {args.refill}, 2 workers)",
        f"{refill_per_s:.2f} kernels/s ({args.refill} in {refill_s:.1f} s)",
    )
    add_cleanup_row(verdicts, seen)
    console.print(verdicts.table("Jupyter: targets and verdicts"))
    console.print(f"(between resets the benchmark waited {waited:.1f} s in total for the pool to refill)")


if __name__ == "__main__":
    main()
