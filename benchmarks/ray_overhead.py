"""What hosting sessions on Ray actors costs: Wordle over /ws, the plain server against ``--ray``.

Two server processes, started in this run and measured by turns with the same client:

- ``plain``: ``omnienv serve wordle`` (environments in the server process);
- ``ray``: ``omnienv serve wordle --ray local --ray-actors N`` (a private Ray instance on 127.0.0.1;
  every reset and step is an actor method call from the front server to a host actor);
- ``pool``: after both servers stopped, ``omnienv.ray.EnvPool`` driven from this process (no
  server, no WebSocket: one batched actor call per actor per step of all environments).

The client is the one of ``benchmarks/ws_throughput.py``: per session, closed loop, ``reset`` then
five ``guess`` steps, again and again. Printed: steps/s and step latency for each, and the ratios
ray / plain. "front CPU" is the front server process only (the actors' CPU is not in it).

    python benchmarks/ray_overhead.py [--duration 3] [--levels 1,16,64] [--actors 2] [--no-pool]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._harness import OMNIENV, ServerProcess, free_port
from benchmarks.ws_throughput import LevelResult, run_level

__all__ = ["main"]


def servers(actors: int, max_sessions: int) -> list[ServerProcess]:
    common = ["serve", "wordle", "--host", "127.0.0.1", "--max-sessions", str(max_sessions), "--no-ui"]
    plain_port, ray_port = free_port(), free_port()
    return [
        ServerProcess("plain", [OMNIENV, *common, "--port", str(plain_port)], plain_port),
        ServerProcess(
            "ray",
            [
                OMNIENV,
                *common,
                "--port",
                str(ray_port),
                "--ray",
                "local",
                "--ray-actors",
                str(actors),
                "--ray-cpus",
                "0.25",
            ],
            ray_port,
        ),
    ]


def pool_steps_per_s(envs: int, actors: int, duration: float) -> float:
    """Steps/s of an EnvPool of ``envs`` Wordle environments, each batch one step of every env."""
    from benchmarks.ws_throughput import guess_words
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0, help="measured seconds per level")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each level")
    parser.add_argument("--levels", type=lambda s: [int(x) for x in s.split(",")], default=[1, 16, 64])
    parser.add_argument("--actors", type=int, default=2, help="Ray host actors of the ray server")
    parser.add_argument("--no-pool", action="store_true", help="skip the EnvPool measurement")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 120))
    results: dict[tuple[str, int], LevelResult] = {}
    procs = servers(args.actors, max(args.levels) + 16)
    try:
        for server in procs:
            server.start(deadline_s=180.0)
            console.print(f"{server.name}: healthy in {server.startup_s:.2f} s (pid {server.pid})")
        for n in args.levels:
            for server in procs:  # by turns: a noisy neighbour weighs on both alike
                result = asyncio.run(run_level(server, n, args.duration, args.warmup))
                results[(server.name, n)] = result
                console.print(
                    f"  {server.name:<6} {n:>3} sessions: {result.steps_per_s:>8,.0f} steps/s, "
                    f"p50 {result.p50_ms:.3f} ms, errors {result.errors}"
                )
    finally:
        for server in procs:
            server.stop()

    table = Table(title=f"Wordle over /ws, {args.duration:g} s per level: plain server vs Ray actors")
    for col in (
        "sessions",
        "plain steps/s",
        "ray steps/s",
        "ray / plain",
        "plain p50 ms",
        "ray p50 ms",
        "ray p99 ms",
        "errors",
        "front CPU µs/step (plain, ray)",
    ):
        table.add_column(col, justify="right")
    for n in args.levels:
        plain, ray = results.get(("plain", n)), results.get(("ray", n))
        if plain is None or ray is None:
            continue
        ratio = ray.steps_per_s / plain.steps_per_s if plain.steps_per_s else float("nan")
        table.add_row(
            str(n),
            f"{plain.steps_per_s:,.0f}",
            f"{ray.steps_per_s:,.0f}",
            f"{ratio:.2f}x",
            f"{plain.p50_ms:.3f}",
            f"{ray.p50_ms:.3f}",
            f"{ray.p99_ms:.3f}",
            str(plain.errors + ray.errors),
            f"{plain.server_us_per_step:.0f}, {ray.server_us_per_step:.0f}",
        )
    console.print(table)
    if not args.no_pool:
        top = max(args.levels)
        rate = pool_steps_per_s(top, args.actors, args.duration)
        plain = results.get(("plain", top))
        ratio = f"{rate / plain.steps_per_s:.2f}x" if plain and plain.steps_per_s else "n/a"
        console.print(
            f"EnvPool, {top} envs on {args.actors} actors, batched step(): {rate:,.0f} steps/s "
            f"({ratio} the plain server at {top} sessions)"
        )


if __name__ == "__main__":
    main()
