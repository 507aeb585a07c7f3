"""What the sandboxed-environment benchmarks share: sessions driven concurrently, memory, verdicts.

``benchmarks/jupyter.py``, ``benchmarks/desktop.py`` and ``benchmarks/terminal.py`` measure the
same things the same way:

- **throughput at N sessions**: N environments, each with its own sandbox (a kernel, a display),
  each driven by its own closed loop (the next step starts when the last one returned), all on one
  event loop, as a server drives them. After ``warmup`` seconds, the steps that *complete* inside
  the next ``duration`` seconds are counted and their latencies kept. The machine's CPU use and
  this process's own are read at the window's edges, so a table can say where the time went (on a
  2-core machine a few sessions already keep both cores busy: more sessions only queue).
- **the most sessions held without a failure**: the same loop at growing N (sessions stay open
  from one level to the next, and more are opened); a level passes when every session could be
  opened and no step raised, took longer than ``deadline`` or came back with a failure flag or an
  error (every session completes at least one step: its loop ends only after its step does). The
  ramp stops at the first failing level or at the cap.
- **memory per session**: RSS and PSS summed over each session's own processes (read from
  ``/proc`` by ``benchmarks/_proc.py``), and this process's own growth per session (its sockets,
  threads and buffers, and its open files: past 1024 of them, anything still waiting with
  ``select`` fails).
  RSS counts shared pages (libraries, the Python image) once per process; PSS splits them among
  the processes that share them, so PSS is the honest cost of one more session.
- **one verdict table**: measure | value | target | verdict (``benchmarks/_sandboxed_tables.py``).

Nothing here asserts on time: a benchmark reports, it never fails a build.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rich.console import Console

from benchmarks._harness import percentile
from benchmarks._proc import cpu_s, host_cpu_s, machine_jiffies, memory_kb, trimmed_rss_kb

__all__ = [
    "Level",
    "Ramp",
    "Session",
    "Sessions",
    "StepFailed",
    "Timing",
    "closed_loop",
    "describe_machine",
    "levels_arg",
    "parse_ramp_args",
    "plan_levels",
    "ramp",
    "ramp_parser",
    "session_count",
    "wide_console",
]

Op = Callable[[], Awaitable[None]]


class StepFailed(Exception):
    """A step that returned, but not as it should: a failure flag, an error, an unexpected output."""


class Closeable(Protocol):
    async def close(self) -> None: ...


# -- sessions and the closed loop ----------------------------------------------------------------


@dataclass
class Session:
    """One open session: the step the loop repeats and the processes that are this session's."""

    op: Op
    pids: Callable[[], set[int]]


class Sessions:
    """Environments opened on demand and closed together, whatever interrupts the benchmark.

    ``make`` builds an environment (cheap, no processes); ``prepare`` resets it and returns its
    :class:`Session`. The environment is registered before ``prepare`` runs, so one that fails or
    is cancelled half-way is still closed by :meth:`aclose`.
    """

    def __init__(
        self, make: Callable[[], Closeable], prepare: Callable[[Any], Awaitable[Session]], parallel: int = 4
    ) -> None:
        self.make, self.prepare, self.parallel = make, prepare, parallel
        self.envs: list[Closeable] = []
        self.items: list[Session] = []
        self.seen: set[int] = set()  # every process any session had, for the cleanup check

    def __len__(self) -> int:
        return len(self.items)

    async def grow(self, n: int) -> None:
        """Open sessions until there are ``n`` (``parallel`` resets at a time: the pool's pace)."""
        gate = asyncio.Semaphore(self.parallel)

        async def one() -> None:
            async with gate:
                env = self.make()
                self.envs.append(env)
                self.items.append(await self.prepare(env))

        async with asyncio.TaskGroup() as group:  # the first failure cancels the other opens
            for _ in range(n - len(self.items)):
                group.create_task(one())

    def all_pids(self) -> set[int]:
        return {pid for pids in self.pids() for pid in pids}

    def pids(self) -> list[set[int]]:
        found = [session.pids() for session in self.items]
        self.seen.update(pid for pids in found for pid in pids)
        return found

    async def aclose(self) -> None:
        self.pids()
        envs, self.envs, self.items = self.envs, [], []
        await asyncio.gather(*(env.close() for env in envs), return_exceptions=True)


@dataclass
class Level:
    """One level of concurrency: what completed inside the measured window."""

    sessions: int
    window_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)  # sorted
    per_session: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    machine_busy: float = float("nan")  # share of all the machine's CPUs busy in the window
    host_cpu_s: float = float("nan")  # CPU seconds this process used in the window
    sandbox_cpu_s: float = float("nan")  # CPU seconds the sessions' own processes used in the window
    memory: tuple[int, int] = (0, 0)  # (RSS, PSS) KiB of all the sessions' processes
    host_kb: int = 0  # this process's RSS after the level
    host_trimmed_kb: int = 0  # the same once malloc_trim gave back the heap that is free
    host_fds: int = 0  # this process's open files after the level

    @property
    def ok(self) -> bool:
        """Nothing failed. (Every session then completed a step: a loop ends only after its step does.)"""
        return not self.failures and bool(self.per_session)

    @property
    def rate(self) -> float:
        return len(self.latencies_ms) / self.window_s if self.window_s else 0.0

    @property
    def p50(self) -> float:
        return percentile(self.latencies_ms, 50)

    @property
    def p99(self) -> float:
        return percentile(self.latencies_ms, 99)

    def cpu_ms_per_step(self) -> tuple[float, float]:
        """(this process, the sandboxes) CPU milliseconds per step completed in the window."""
        steps = max(1, len(self.latencies_ms))
        return self.host_cpu_s * 1e3 / steps, self.sandbox_cpu_s * 1e3 / steps

    def why(self) -> str:
        return f"{len(self.failures)} failure(s), first: {self.failures[0]}" if self.failures else ""


async def closed_loop(
    ops: list[Op], warmup: float, duration: float, deadline: float, pids: Callable[[], set[int]] = set
) -> Level:
    """Drive every op in its own closed loop; count what completes in [warmup, warmup + duration].

    The CPU time of the machine, of this process and of ``pids()`` (the sessions' processes) is
    read at the window's edges.
    """
    level = Level(len(ops), window_s=duration, per_session=[0] * len(ops))
    loop = asyncio.get_running_loop()
    opens = loop.time() + warmup
    closes = opens + duration
    latencies: list[float] = []

    async def drive(index: int, op: Op) -> None:
        while loop.time() < closes:
            began = time.perf_counter()
            try:
                await asyncio.wait_for(op(), deadline)
            except TimeoutError:
                level.failures.append(f"session {index}: no answer within {deadline:g} s")
                return
            except Exception as exc:
                level.failures.append(f"session {index}: {type(exc).__name__}: {str(exc)[:200]}")
                return
            if opens <= loop.time() <= closes:
                latencies.append((time.perf_counter() - began) * 1e3)
                level.per_session[index] += 1

    async def watch() -> None:
        await asyncio.sleep(max(0.0, opens - loop.time()))
        watched = pids()
        busy0, total0, host0, sandboxes0 = *machine_jiffies(), host_cpu_s(), cpu_s(watched)
        await asyncio.sleep(max(0.0, closes - loop.time()))
        busy1, total1, host1, sandboxes1 = *machine_jiffies(), host_cpu_s(), cpu_s(watched)
        level.machine_busy = (busy1 - busy0) / max(1, total1 - total0)
        level.host_cpu_s, level.sandbox_cpu_s = host1 - host0, sandboxes1 - sandboxes0

    await asyncio.gather(watch(), *(drive(i, op) for i, op in enumerate(ops)))
    level.latencies_ms = sorted(latencies)
    return level


def plan_levels(levels: list[int], cap: int) -> list[int]:
    """The measured levels and the doublings up to ``cap``, in order (1, 2, 4, 8, ... cap)."""
    ramp_levels, n = set(), 1
    while n < cap:
        ramp_levels.add(n)
        n *= 2
    return sorted({*levels, *ramp_levels, cap})


@dataclass
class Timing:
    """How long each level runs: ``warmup``, then ``duration`` measured (``check_s`` at a level that
    is only checked); a step slower than ``deadline`` is a failure."""

    warmup: float
    duration: float
    check_s: float
    deadline: float
    turns: int = 2
    """A measured level with a reference runs in this many turns each, ours and theirs alternating."""


@dataclass
class Ramp:
    """What :func:`ramp` found: our levels, the most sessions held, and the reference's levels."""

    run: list[Level] = field(default_factory=list)
    held: int = 0
    reference: list[Level] = field(default_factory=list)

    def reference_levels(self) -> set[int]:
        return {level.sessions for level in self.reference}


async def run_level(sessions: Sessions, n: int, warmup: float, duration: float, deadline: float) -> Level:
    """Open sessions up to ``n``, drive them all, and read their memory; failures are the level's."""
    try:
        await sessions.grow(n)
    except Exception as exc:  # the machine could not open the n-th session: that is this level's failure
        while isinstance(exc, ExceptionGroup):  # the TaskGroup's: say what the first open raised
            exc = exc.exceptions[0]
        return Level(n, failures=[f"opening session {len(sessions) + 1}: {type(exc).__name__}: {exc}"])
    level = await closed_loop([session.op for session in sessions.items], warmup, duration, deadline, sessions.all_pids)
    level.memory = memory_kb(pid for pids in sessions.pids() for pid in pids)
    level.host_kb = memory_kb([os.getpid()])[0]
    level.host_trimmed_kb = trimmed_rss_kb()
    level.host_fds = len(os.listdir("/proc/self/fd"))
    return level


def merge(first: Level, then: Level) -> Level:
    """Two windows of the same level as one (the memory and files are the later one's)."""
    if not (first.window_s and then.window_s):  # the first turn, or one that could not open its sessions
        then.failures = first.failures + then.failures
        return then
    window = first.window_s + then.window_s
    return Level(
        first.sessions,
        window,
        sorted(first.latencies_ms + then.latencies_ms),
        [a + b for a, b in zip(first.per_session, then.per_session, strict=True)],
        first.failures + then.failures,
        (first.machine_busy * first.window_s + then.machine_busy * then.window_s) / window,
        first.host_cpu_s + then.host_cpu_s,
        first.sandbox_cpu_s + then.sandbox_cpu_s,
        then.memory,
        then.host_kb,
        then.host_trimmed_kb,
        then.host_fds,
    )


def _progress(console: Console, label: str, level: Level, unit: str) -> None:
    if not level.ok:
        console.print(f"[red]{label}, {session_count(level.sessions)}: failed ({level.why()[:300]})")
        return
    console.print(
        f"[dim]{label}, {session_count(level.sessions)}: {level.rate:.0f} {unit}/s, p50 {level.p50:.1f} ms, "
        f"p99 {level.p99:.1f} ms; machine CPU {level.machine_busy:.0%} busy; "
        f"this process {level.host_kb >> 10} MiB RSS, {level.host_fds} open files"
    )


async def ramp(
    sessions: Sessions,
    levels: list[int],
    cap: int,
    timing: Timing,
    console: Console,
    unit: str,
    reference: tuple[str, Sessions] | None = None,
) -> Ramp:
    """Every level of :func:`plan_levels` until one fails (see the module docs).

    The levels in ``levels`` are measured, the others only checked. At each measured level ours and
    the reference's sessions (when given) take turns (``timing.turns`` windows each, merged), so
    that the machine's other load, which drifts, hits both alike; the reference's sessions are
    closed after the last measured level.
    """
    found = Ramp()
    trimmed_rss_kb()  # what the benchmark's earlier parts freed does not count against the sessions
    for n in plan_levels(levels, cap):
        if n not in levels:  # a ramp level: checked briefly
            level = await run_level(sessions, n, min(timing.warmup, 1.0), timing.check_s, timing.deadline)
        elif reference is None:
            level = await run_level(sessions, n, timing.warmup, timing.duration, timing.deadline)
        else:  # ours and the reference's in turns, so that the machine's other load hits both alike
            level, theirs = Level(n), Level(n)
            for turn in range(timing.turns):
                warmup = timing.warmup if turn == 0 else min(timing.warmup, 0.5)
                part = timing.duration / timing.turns
                level = merge(level, await run_level(sessions, n, warmup, part, timing.deadline))
                theirs = merge(theirs, await run_level(reference[1], n, warmup, part, timing.deadline))
                if not (level.ok and theirs.ok):
                    break
            _progress(console, "omnienv", level, unit)
            _progress(console, reference[0], theirs, unit)
            found.reference.append(theirs)
            if n == max(levels) or not theirs.ok:
                await reference[1].aclose()
                reference = None
        if n not in found.reference_levels():
            _progress(console, "omnienv", level, unit)
        found.run.append(level)
        if not level.ok:
            break
        found.held = n
    if reference is not None:
        await reference[1].aclose()
    return found


def session_count(n: int) -> str:
    return f"{n} session{'s' if n != 1 else ''}"


def describe_machine() -> str:
    """The CPUs and how busy other work keeps them (sampled for a second): other load skews every number."""
    busy0, total0 = machine_jiffies()
    time.sleep(1.0)
    busy1, total1 = machine_jiffies()
    busy = (busy1 - busy0) / max(1, total1 - total0)
    return f"{os.cpu_count()} CPUs, {busy:.0%} busy with other work before the benchmark started"


def levels_arg(text: str) -> list[int]:
    """``--levels 1,8,32``."""
    return sorted({int(part) for part in text.split(",") if part.strip()})


def ramp_parser(description: str, step: str, pool: bool = True) -> argparse.ArgumentParser:
    """The options the benchmarks share: the ramp's levels and timing, ``--quick``, and the pool
    refill where the environment has a pool."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="fewer samples, levels 1,4 and a cap of 16")
    if pool:
        parser.add_argument("--refill", type=int, default=8, help="size of the pool drained to time its refill")
    parser.add_argument("--levels", type=levels_arg, default=[1, 8, 32], help="sessions measured, e.g. 1,8,32")
    parser.add_argument("--duration", type=float, default=8.0, help="seconds measured at each level")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds run before each level's window")
    parser.add_argument("--check", type=float, default=3.0, help="seconds run at each ramp level in between")
    parser.add_argument("--deadline", type=float, default=60.0, help=f"a {step} slower than this is a failure")
    parser.add_argument("--max-sessions-cap", type=int, default=128)
    return parser


def parse_ramp_args(parser: argparse.ArgumentParser, argv: list[str] | None, **quick: Any) -> argparse.Namespace:
    """The options, with ``--quick`` lowering the defaults (the shared ones, then the benchmark's own
    ``quick`` values; an option given still wins) and the cap raised to the highest level asked for."""
    args = parser.parse_args(argv)
    if args.quick:
        parser.set_defaults(refill=4, levels=[1, 4], duration=3.0, warmup=1.0, check=2.0, max_sessions_cap=16, **quick)
        args = parser.parse_args(argv)
    args.max_sessions_cap = max(args.max_sessions_cap, *args.levels)
    return args


def wide_console() -> Console:
    """A console as wide as the terminal, or 140 columns when the output goes to a file or a pipe."""
    console = Console()
    return console if console.is_terminal else Console(width=140)
