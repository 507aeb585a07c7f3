"""Terminal: sandboxed shells, commands alone and at 1, 8 and 32 concurrent sessions, and grading.

Measured side by side in one run:

- reset: ``Terminal.reset`` of a shipped task (a bubblewrap sandbox with its limits, the task's
  workspace built in it, one bash started there and answering) against the raw way to get a
  shell: ``bash`` started on pipes until it answers (no sandbox, no workspace);
- ``true``: ``Terminal.step(run)`` against the same command written to a raw persistent bash, its
  end read back from a marker line (the floor: no sandbox, no bookkeeping, no thread);
- grading: ``Terminal.end()`` right after a reset, the task's own tests run by its verifier in a
  sandbox of their own over a copy of the workspace (each task's tests take their own time: the
  spread is the tasks');
- throughput: N sessions (``--levels``, default 1, 8, 32), each a ``Terminal`` on its own
  sandbox, each running ``x=$((x+1))`` in a closed loop on one event loop, every step on a thread
  of the pool a server runs blocking environments on (``blocking_threads``), against N raw bashes
  driven the same way over asyncio's pipes, ours and theirs taking turns at each level: commands per
  second, per-command p50/p99, the ratio to 1 session. On a 2-core machine a command is mostly
  the machine waking processes (the shell, its reader thread, the event loop): the CPU columns show
  where the time goes;
- one session's ``true`` while 4 others run ``sleep 2``: a long command holds a thread, never
  the other sessions (a served terminal's agents run builds and test suites);
- the most sessions held: the same loop at 1, 2, 4, ... up to ``--max-sessions-cap``; a level
  passes when every session ran commands with no error, no failure flag and none slower than
  ``--deadline``. Memory per session is PSS (and RSS) summed over the session's processes
  (bubblewrap, the sandbox's init, bash) at the highest level passed;
- cleanup: every process of every session is checked gone after close, and no sandbox folder is left.

Targets: ``true`` p50 <= 3x the raw bash's (a command costs the agent no more than the shell it
runs in); one session's ``true`` beside the long commands p50 <= 5x the same step alone (nothing
queues behind them); the rest is reported. (benchmarks/_sandboxed.py describes the closed loop and the memory figures.)

    python benchmarks/terminal.py [--quick] [--levels 1,8,32] [--duration 8] [--max-sessions-cap 128]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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
from omnienv.core.adapters import as_async
from omnienv.core.threads import blocking_threads
from omnienv.envs.terminal import Terminal

__all__ = ["main"]

TASK = "test/csv-pivot-monthly"
"""A task whose workspace is a few small files: a reset measures the sandbox, not a copy."""
TRUE_TARGET = 3.0
BESIDE_LONG_TARGET = 5.0
LONG_COMMANDS = 4
MARKER = "__bench_done__"


class UnboundedTerminal(Terminal):
    """The same environment without a turn limit, so one episode can run every command of a level."""

    name = "terminal"
    max_turns = 10**9  # no limit a benchmark can reach


def check(result: Any, expected: str) -> None:
    """Anything but the expected output (a failure flag, an error, the end) is a failure."""
    if result.failure is not None:
        raise StepFailed(f"failure flag {result.failure.kind}: {result.failure.message}")
    if result.observation.is_error or result.over or result.observation.text != expected:
        raise StepFailed(f"unexpected result (over={result.over}): {result.observation.text[:200]}")


# -- one session -----------------------------------------------------------------------------------


class RawBash:
    """A plain bash on pipes in a folder of its own: the floor of a shell session."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="omnienv-bench-bash-")
        self.process: asyncio.subprocess.Process | None = None

    async def open(self) -> Session:
        self.process = await asyncio.create_subprocess_exec(
            "bash", "--noprofile", "--norc", cwd=self.folder, env={"PATH": "/usr/bin:/bin", "HOME": self.folder},
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        await self.run("x=0")
        pid = self.process.pid
        return Session(lambda: self.run("x=$((x+1))"), lambda: {pid})

    async def run(self, command: str) -> None:
        process = self.process
        assert process is not None and process.stdin is not None and process.stdout is not None
        process.stdin.write(f"{command}\necho {MARKER} $?\n".encode())
        line = await process.stdout.readline()
        if line != f"{MARKER} 0\n".encode():
            raise StepFailed(f"the raw bash answered {line[:200]!r}")

    async def close(self) -> None:
        try:
            if self.process is not None and self.process.returncode is None:
                self.process.kill()
                await self.process.wait()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def raw_starts(n: int) -> list[float]:
    """Seconds from starting a bash on pipes to its first answer."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        with subprocess.Popen(
            ["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={"PATH": "/usr/bin:/bin"},
        ) as process:  # fmt: skip
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(f"echo {MARKER}\n".encode())
            process.stdin.flush()
            process.stdout.readline()
            times.append(time.perf_counter() - started)
            process.stdin.close()
    return times


def raw_trues(n: int) -> list[float]:
    async def measure() -> list[float]:
        bash = RawBash()
        try:
            await bash.open()
            times = []
            for _ in range(n):
                started = time.perf_counter()
                await bash.run("true")
                times.append(time.perf_counter() - started)
            return times
        finally:
            await bash.close()

    return asyncio.run(measure())


def env_resets(n: int, seen: set[int]) -> list[float]:
    env = UnboundedTerminal()
    times = []
    try:
        for _ in range(n):
            started = time.perf_counter()
            env.reset(TASK)
            times.append(time.perf_counter() - started)
            seen.update(env.sandbox.pids() if env.sandbox else ())
    finally:
        env.close()
    return times


def env_trues(n: int, seen: set[int]) -> list[float]:
    env = UnboundedTerminal()
    call = ToolCall("run", {"command": "true"})
    times = []
    try:
        env.reset(TASK)
        seen.update(env.sandbox.pids() if env.sandbox else ())
        for _ in range(n):
            started = time.perf_counter()
            result = env.step(call)
            times.append(time.perf_counter() - started)
            check(result, "[exit code 0]")
    finally:
        env.close()
    return times


def grades(n: int) -> list[tuple[str, float]]:
    """(task, seconds) of ``end()`` right after a reset, over the test split's tasks in turn."""
    tasks = [task.id for task in Terminal.tasks("test")]
    env = Terminal()
    found = []
    try:
        for i in range(n):
            env.reset(tasks[i % len(tasks)])
            started = time.perf_counter()
            result = env.end()
            found.append((tasks[i % len(tasks)], time.perf_counter() - started))
            if result.failure is not None:
                raise StepFailed(f"grading failed: {result.failure.message}")
    finally:
        env.close()
    return found


async def beside_long_commands(n: int, seen: set[int]) -> list[float]:
    """One session's ``true`` while :data:`LONG_COMMANDS` other sessions run ``sleep 2`` over and over."""
    threads = blocking_threads()
    envs = [as_async(UnboundedTerminal(), threads) for _ in range(LONG_COMMANDS + 1)]
    stop = asyncio.Event()

    async def long_commands(env: Any) -> None:
        while not stop.is_set():
            check(await env.step(ToolCall("run", {"command": "sleep 2"})), "[exit code 0]")

    try:
        for env in envs:
            await env.reset(TASK)
            seen.update(env.env.sandbox.pids())
        busy = [asyncio.create_task(long_commands(env)) for env in envs[1:]]
        deadline = time.monotonic() + 30
        while not all(env.env.commands for env in envs[1:]):  # until every long command has started
            if time.monotonic() > deadline:
                raise StepFailed("the long commands did not start within 30 s")
            await asyncio.sleep(0.01)
        times = []
        for _ in range(n):
            started = time.perf_counter()
            check(await envs[0].step(ToolCall("run", {"command": "true"})), "[exit code 0]")
            times.append(time.perf_counter() - started)
        stop.set()
        await asyncio.gather(*busy)
        return times
    finally:
        await asyncio.gather(*(env.close() for env in envs), return_exceptions=True)
        threads.shutdown(wait=False)


# -- many sessions ---------------------------------------------------------------------------------


async def open_session(env: Any) -> Session:
    """Reset and set ``x``; the session's step is then ``x=$((x+1))``."""
    await env.reset(TASK)
    check(await env.step(ToolCall("run", {"command": "x=0"})), "[exit code 0]")
    terminal: Terminal = env.env
    call = ToolCall("run", {"command": "x=$((x+1))"})

    async def step() -> None:
        check(await env.step(call), "[exit code 0]")

    return Session(step, lambda: terminal.sandbox.pids() if terminal.sandbox else set())


async def concurrency(args: argparse.Namespace, console: Console, seen: set[int]) -> Ramp:
    """The levels and the ramp, the raw reference at the measured levels (see the module docs)."""
    threads = blocking_threads()
    sessions = Sessions(lambda: as_async(UnboundedTerminal(), threads), open_session, parallel=4)
    raw = Sessions(RawBash, RawBash.open, parallel=4)
    timing = Timing(args.warmup, args.duration, args.check, args.deadline)
    try:
        return await ramp(sessions, args.levels, args.max_sessions_cap, timing, console, "commands", ("raw bash", raw))
    finally:
        try:
            await raw.aclose()
            await sessions.aclose()
            seen.update(sessions.seen | raw.seen)
        finally:
            threads.shutdown(wait=False)


def main(argv: list[str] | None = None) -> None:
    parser = ramp_parser(__doc__.split("\n\n")[0], "command", pool=False)
    parser.add_argument("--resets", type=int, default=20)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--grades", type=int, default=10, help="tasks graded, the test split's in turn")
    args = parse_ramp_args(parser, argv, resets=5, calls=100, grades=2)
    console = wide_console()
    console.print(f"machine: {describe_machine()}")
    # Every sandbox (the sessions', the verifiers') and raw bash folder is made in a folder of the
    # benchmark's own, so what is left there at the end is what the benchmark left.
    tempfile.tempdir = own = tempfile.mkdtemp(prefix="omnienv-bench-terminal-")
    try:
        run_all(args, console)
    finally:
        tempfile.tempdir = None
        shutil.rmtree(own, ignore_errors=True)


def run_all(args: argparse.Namespace, console: Console) -> None:
    seen: set[int] = set()

    rows: list[tuple[str, list[float]]] = []
    measure: Callable[[str, list[float]], None] = lambda name, samples: rows.append((name, samples))  # noqa: E731
    measure("raw bash start (no sandbox)", raw_starts(args.resets))
    measure("omnienv reset (sandbox, workspace, bash)", env_resets(args.resets, seen))
    measure("raw true (bash on pipes)", raw_trues(args.calls))
    measure("omnienv true step (sandboxed)", env_trues(args.calls, seen))
    measure(f"omnienv true beside {LONG_COMMANDS} sessions' sleep 2", asyncio.run(beside_long_commands(20, seen)))
    graded = grades(args.grades)
    measure("omnienv grading (end: the task's tests)", [seconds for _, seconds in graded])
    found = asyncio.run(concurrency(args, console, seen))

    console.print(samples_table("Terminal: a shell, one command, a grade (ms)", rows))
    title = "Terminal: x=$((x+1)) in N concurrent sessions, one sandboxed bash each"
    console.print(levels_table(found.run, args.levels, "commands", title, ("raw bash", found.reference)))

    by_name = {name: stats(samples) for name, samples in rows}
    reset, raw_start = by_name["omnienv reset (sandbox, workspace, bash)"], by_name["raw bash start (no sandbox)"]
    step, raw_step = by_name["omnienv true step (sandboxed)"], by_name["raw true (bash on pipes)"]
    beside = by_name[f"omnienv true beside {LONG_COMMANDS} sessions' sleep 2"]
    grade = by_name["omnienv grading (end: the task's tests)"]
    verdicts = Verdicts()
    verdicts.report("reset p50", f"{reset[0]:.1f} ms ({reset[0] / raw_start[0]:.1f}x a raw bash start)")
    verdicts.report("raw bash start p50 (no sandbox)", f"{raw_start[0]:.2f} ms", "reference")
    verdicts.target(
        "true step p50 (sandboxed), over the raw bash's",
        step[0] / raw_step[0],
        TRUE_TARGET,
        unit="x",
        note=f" ({step[0]:.3f} ms; p99 {step[1]:.2f} ms, {step[1] / raw_step[1]:.1f}x raw)",
    )
    verdicts.report("raw true p50 (bash on pipes)", f"{raw_step[0]:.3f} ms", "reference")
    verdicts.target(
        f"true step p50 while {LONG_COMMANDS} other sessions run sleep 2, over alone",
        beside[0] / step[0],
        BESIDE_LONG_TARGET,
        unit="x",
        note=f" ({beside[0]:.3f} ms; p99 {beside[1]:.2f} ms)",
    )
    slowest = max(graded, key=lambda item: item[1])
    verdicts.report(
        f"grading p50 over {len(graded)} tasks (end)",
        f"{grade[0]:.0f} ms (slowest: {slowest[0]}, {slowest[1] * 1000:.0f} ms)",
    )
    reference = ("raw bash", found.reference)
    add_ramp_rows(verdicts, found.run, found.held, args.levels, "commands", args.max_sessions_cap, reference)
    add_cleanup_row(verdicts, seen)
    left = sorted(path.name for path in Path(tempfile.gettempdir()).iterdir())
    verdicts.rows.append(
        ("sandbox folders left after close", f"{len(left)}{f': {left[:4]}' if left else ''}", "0",
         "[green]meets" if not left else "[red]misses"),
    )  # fmt: skip
    console.print(verdicts.table("Terminal: targets and verdicts"))


if __name__ == "__main__":
    main()
