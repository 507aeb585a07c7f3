"""Jupyter: reset from the warm pool and the ``print(1)`` round trip, against raw jupyter_client.

Measured side by side in one run:

- reset: ``Jupyter.reset`` of a task with files, a sandboxed kernel waiting in the pool, against
  the raw way to get a kernel: ``jupyter_client.KernelManager.start_kernel`` + ``wait_for_ready``
  (no sandbox, TCP on 127.0.0.1), and against our own cold start (bubblewrap + kernel, no pool);
- ``print(1)``: ``Jupyter.step(add_and_execute_code_cell)`` against a bare
  ``BlockingKernelClient.execute`` + iopub read on the raw kernel (the floor: no sandbox, no
  bookkeeping).

Targets: reset p50 <= 100 ms from the pool; ``print(1)`` p50 <= 10 ms.

    python benchmarks/jupyter.py [--resets 30] [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._harness import percentile
from omnienv.core import ToolCall
from omnienv.envs.jupyter import Jupyter
from omnienv.sandboxes.jupyter import KernelPool, SandboxedKernel

__all__ = ["main"]


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return percentile(ordered, 50) * 1000, percentile(ordered, 99) * 1000


def raw_kernel_starts(n: int) -> list[float]:
    from jupyter_client import KernelManager

    times = []
    for _ in range(n):
        manager = KernelManager(kernel_name="python3")
        started = time.perf_counter()
        manager.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
    from jupyter_client import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resets", type=int, default=30)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--raw-starts", type=int, default=5)
    args = parser.parse_args(argv)
    console = Console()

    rows: list[tuple[str, list[float]]] = []
    measure: Callable[[str, list[float]], None] = lambda name, samples: rows.append((name, samples))  # noqa: E731
    measure("raw jupyter_client start (no sandbox)", raw_kernel_starts(args.raw_starts))
    measure("omnienv cold start (bwrap, no pool)", cold_starts(args.raw_starts))
    with KernelPool(3) as pool:
        resets, waited = asyncio.run(env_resets(pool, args.resets))
        measure("omnienv reset from the warm pool", resets)
        measure("raw print(1) (no sandbox)", raw_print_calls(args.calls))
        measure("omnienv print(1) step (sandboxed)", asyncio.run(env_print_calls(pool, args.calls)))

    table = Table(title="Jupyter: kernel acquisition and print(1) round trip (ms)")
    for column in ("measurement", "n", "p50", "p99"):
        table.add_column(column, justify="left" if column == "measurement" else "right")
    for name, samples in rows:
        p50, p99 = stats(samples)
        table.add_row(name, str(len(samples)), f"{p50:.2f}", f"{p99:.2f}")
    console.print(table)
    by_name = {name: stats(samples) for name, samples in rows}
    reset = by_name["omnienv reset from the warm pool"]
    raw_start = by_name["raw jupyter_client start (no sandbox)"]
    step = by_name["omnienv print(1) step (sandboxed)"]
    raw_step = by_name["raw print(1) (no sandbox)"]
    console.print(
        f"reset p50 {reset[0]:.1f} ms (target <= 100 ms): {reset[0] / raw_start[0]:.3f}x the raw "
        f"kernel start; waited {waited:.1f} s in total for the pool to refill between resets"
    )
    console.print(
        f"print(1) p50 {step[0]:.2f} ms (target <= 10 ms): {step[0] / raw_step[0]:.2f}x the raw "
        f"jupyter_client call; p99 {step[1] / raw_step[1]:.2f}x"
    )


if __name__ == "__main__":
    main()
