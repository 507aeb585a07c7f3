"""What hosting sessions on Ray actors costs: Wordle over /ws, the plain server against ``--ray``.

Two server processes, started in this run and measured by turns with the same client:

- ``plain``: ``omnienv serve wordle`` (environments in the server process);
- ``ray``: ``omnienv serve wordle --ray local --ray-actors N`` (a private Ray instance on 127.0.0.1;
  every reset and step goes from the front server to a host actor, the calls of one event-loop
  turn to one actor batched into one, over the actor's own connection: ``omnienv.ray.channel``);
- ``ray-calls`` (with ``--calls``): the same as ``ray`` with ``--ray-calls``, the batches sent as
  Ray actor calls instead of over the actors' own connections, to show what those save;
- ``pool``: after the servers stopped, ``omnienv.ray.EnvPool`` driven from this process (no
  server, no WebSocket: one batched actor call per actor per step of all environments).

The client is the one of ``benchmarks/ws_throughput.py``: per session, closed loop, ``reset`` then
five ``guess`` steps, again and again. Levels run by turns (plain, ray, plain, ray...), ``--repeat``
times; medians are reported.

One table: measure | plain | ray | ray / plain | target | verdict. The target (issue 24): through
Ray, at least half the plain server's steps/s at 64 sessions. CPU per step is reported beside it:
on a shared 2-core machine steps/s mostly tells how the other processes were scheduled, while CPU
per step barely moves. "front" is the server process alone; "Ray side" is everything else of the
ray server (its host actors, raylet, GCS); the client's CPU is in neither.

The default is one host actor: on 2 cores the front, the actor and the client already share the
machine, and the plain server too hosts every session in one process. ``--actors 2`` shows what a
second actor costs here (smaller batches, one more process).

    python benchmarks/ray_overhead.py [--duration 3] [--levels 1,16,64] [--actors 1] [--repeat 2] [--no-pool] [--calls]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._harness import OMNIENV, ServerProcess, free_port
from benchmarks.ws_throughput import LevelResult, run_level

__all__ = ["main"]

TARGET = 0.5
"""Ray's steps/s at the top level, as a fraction of the plain server's (issue 24)."""


@dataclass
class Run:
    """One level on one server, with the CPU of the rest of its session (the Ray side)."""

    result: LevelResult
    side_us_per_step: float


def servers(actors: int, max_sessions: int, calls: bool) -> list[ServerProcess]:
    common = ["serve", "wordle", "--host", "127.0.0.1", "--max-sessions", str(max_sessions), "--no-ui"]
    ray = ["--ray", "local", "--ray-actors", str(actors), "--ray-cpus", "0.25"]
    variants = {"plain": [], "ray": ray, **({"ray-calls": [*ray, "--ray-calls"]} if calls else {})}
    started = []
    for name, extra in variants.items():
        port = free_port()
        started.append(ServerProcess(name, [OMNIENV, *common, "--port", str(port), *extra], port))
    return started


def session_cpu_s(server: ServerProcess) -> float:
    """CPU seconds used so far by the server's session (its own, started with
    ``start_new_session``) apart from the server process: the Ray processes it started."""
    import psutil

    total = 0.0
    for process in psutil.process_iter():
        try:
            if process.pid != server.pid and os.getsid(process.pid) == server.pid:
                times = process.cpu_times()
                total += times.user + times.system + times.children_user + times.children_system
        except (psutil.Error, ProcessLookupError):
            continue
    return total


def measure_level(server: ServerProcess, sessions: int, duration: float, warmup: float) -> Run:
    front0, side0 = server.cpu_s(), session_cpu_s(server)
    result = asyncio.run(run_level(server, sessions, duration, warmup))
    front, side = server.cpu_s() - front0, session_cpu_s(server) - side0
    # run_level reports the front's CPU per step over its own window; the Ray side's is in the same
    # proportion to the front's as their CPU over this (slightly wider) window.
    side_us = result.server_us_per_step * side / front if front > 0 else float("nan")
    return Run(result, side_us)


def pool_steps_per_s(envs: int, actors: int, duration: float) -> float:
    """Steps/s of an EnvPool of ``envs`` Wordle environments, each batch one step of every env."""
    from benchmarks._clients import guess_words
    from omnienv.core import ToolCall
    from omnienv.ray import EnvPool, connect, disconnect

    connect(num_cpus=2, object_store_memory=80 << 20)
    try:
        with EnvPool("wordle", envs, num_actors=actors, actor_options={"num_cpus": 0.25}) as pool:
            batches = [[ToolCall("guess", {"word": word})] * envs for word in guess_words()]
            steps, episode = 0, 0
            pool.reset([episode * envs + i for i in range(envs)])
            start = time.perf_counter()
            while time.perf_counter() - start < duration:
                for calls in batches:
                    pool.step(calls)
                    steps += envs
                episode += 1
                pool.reset([episode * envs + i for i in range(envs)])
            return steps / (time.perf_counter() - start)
    finally:
        disconnect()


def median_runs(runs: list[Run]) -> Run:
    """The run with the median steps/s, the lower one of an even count (its latencies and CPU come
    with it, so that a row's numbers belong together)."""
    ordered = sorted(runs, key=lambda r: r.result.steps_per_s)
    return ordered[(len(ordered) - 1) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0, help="measured seconds per level")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each level")
    parser.add_argument("--levels", type=lambda s: [int(x) for x in s.split(",")], default=[1, 16, 64])
    parser.add_argument("--actors", type=int, default=1, help="Ray host actors of the ray server")
    parser.add_argument("--repeat", type=int, default=2, help="turns per level; medians are reported")
    parser.add_argument("--no-pool", action="store_true", help="skip the EnvPool measurement")
    parser.add_argument("--calls", action="store_true", help="also measure the ray server with --ray-calls")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 130))
    runs: dict[tuple[str, int], list[Run]] = {}
    procs = servers(args.actors, max(args.levels) + 16, args.calls)
    try:
        for server in procs:
            server.start(deadline_s=180.0)
            console.print(f"{server.name}: healthy in {server.startup_s:.2f} s (pid {server.pid})")
        for turn in range(args.repeat):
            for n in args.levels:
                for server in procs:  # by turns: a noisy neighbour weighs on both alike
                    run = measure_level(server, n, args.duration, args.warmup)
                    runs.setdefault((server.name, n), []).append(run)
                    r = run.result
                    console.print(
                        f"  turn {turn + 1}, {server.name:<9} {n:>3} sessions: {r.steps_per_s:>8,.0f} steps/s, "
                        f"p50 {r.p50_ms:.3f} ms, front {r.server_us_per_step:.0f} µs/step, "
                        f"Ray side {run.side_us_per_step:.0f} µs/step, errors {r.errors}"
                    )
    finally:
        for server in procs:
            server.stop()
    rate = float("nan")
    if not args.no_pool:
        rate = pool_steps_per_s(max(args.levels), args.actors, args.duration)

    table = Table(
        "measure",
        "plain",
        "ray",
        "ray / plain",
        "target",
        "verdict",
        title=(
            f"Wordle over /ws through Ray ({args.actors} host actor(s), private instance on 127.0.0.1) against the "
            f"plain server: {args.duration:g} s per level, median of {args.repeat} turn(s)"
        ),
    )
    top = max(args.levels)
    missed = 0
    for n in args.levels:
        if ("plain", n) not in runs or ("ray", n) not in runs:
            continue
        plain, ray = median_runs(runs[("plain", n)]).result, median_runs(runs[("ray", n)])
        ratio = ray.result.steps_per_s / plain.steps_per_s if plain.steps_per_s else float("nan")
        errors = plain.errors + ray.result.errors
        if n == top:
            ok = ratio >= TARGET and errors == 0
            missed += not ok
            target, verdict = f">= {TARGET:g}x", "[green]meets" if ok else "[red]misses"
        else:
            target, verdict = "—", "reported"
        table.add_row(
            f"steps/s at {n} session(s)" + (f" ({errors} errors)" if errors else ""),
            f"{plain.steps_per_s:,.0f}",
            f"{ray.result.steps_per_s:,.0f}",
            f"{ratio:.2f}x",
            target,
            verdict,
        )
        table.add_row(
            f"  step p50 / p99 ms at {n}",
            f"{plain.p50_ms:.2f} / {plain.p99_ms:.2f}",
            f"{ray.result.p50_ms:.2f} / {ray.result.p99_ms:.2f}",
            f"{ray.result.p50_ms / plain.p50_ms:.1f}x" if plain.p50_ms else "—",
            "—",
            "reported",
        )
        table.add_row(
            f"  front CPU µs/step at {n}",
            f"{plain.server_us_per_step:.0f}",
            f"{ray.result.server_us_per_step:.0f}",
            f"{ray.result.server_us_per_step / plain.server_us_per_step:.1f}x" if plain.server_us_per_step else "—",
            "—",
            "reported",
        )
        all_ray = ray.result.server_us_per_step + ray.side_us_per_step
        table.add_row(
            f"  front + Ray side CPU µs/step at {n}",
            f"{plain.server_us_per_step:.0f}",
            f"{ray.result.server_us_per_step:.0f} + {ray.side_us_per_step:.0f}",
            f"{all_ray / plain.server_us_per_step:.1f}x" if plain.server_us_per_step else "—",
            "—",
            "reported",
        )
        if ("ray-calls", n) in runs:
            calls = median_runs(runs[("ray-calls", n)])
            table.add_row(
                f"  steps/s at {n} through Ray's actor calls (--ray-calls)",
                f"{plain.steps_per_s:,.0f}",
                f"{calls.result.steps_per_s:,.0f}",
                f"{calls.result.steps_per_s / plain.steps_per_s:.2f}x" if plain.steps_per_s else "—",
                "—",
                "reported",
            )
    if not args.no_pool:
        plain_top = runs.get(("plain", top))
        base = median_runs(plain_top).result.steps_per_s if plain_top else float("nan")
        table.add_row(
            f"EnvPool batched step(), {top} envs, no server",
            f"{base:,.0f}" if plain_top else "—",
            f"{rate:,.0f}",
            f"{rate / base:.2f}x" if plain_top and base else "—",
            "—",
            "reported",
        )
    console.print(table)
    console.print(
        f"machine: {os.cpu_count()} CPUs, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
        f"(steps/s depend on what else runs; the CPU rows far less)"
    )
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
