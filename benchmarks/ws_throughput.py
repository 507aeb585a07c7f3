"""Wordle over /ws: omnienv against OpenEnv 0.10.0 and a bare echo server, in one run.

Servers, each a separate process pinned to one CPU; the client gets another, so the two run side
by side as a server and its clients do (on a one-CPU machine, or with ``--no-pin``, neither is
pinned; the log's first line says which CPUs were used):

- ``omnienv``: ``omnienv serve wordle`` (``benchmarks/_servers.py`` starts each of them);
- ``omnienv-echo``: ``omnienv serve echo``, whose one tool repeats the word it is sent: omnienv's
  own work on a step with next to no game, printed for scale against the echo server (where
  ``omnienv`` also plays Wordle, which the echo server does not);
- ``openenv-mcp``: the same game written as an OpenEnv ``MCPEnvironment`` (FastMCP tools), the way
  OpenEnv's own tool-calling environments are written (benchmarks/openenv_wordle);
- ``openenv-plain``: the same game as a plain OpenEnv ``Environment`` with an MCP-shaped action,
  OpenEnv's fastest faithful form (no FastMCP on the hot path); both OpenEnv servers run on uvicorn's
  defaults, as ``uvicorn module:app`` would;
- ``echo``: a bare Starlette WebSocket endpoint on uvicorn that echoes every frame: the stack's limit
  for an ASGI app (permessage-deflate off, as the limit should be; the other servers keep their own
  setting, shown in the ``deflate`` column: the client offers it, like OpenEnv's client does). Every
  frame it echoes takes the ASGI hop (uvicorn's queue, a task switch, ``await send``), which omnienv
  skips for a fast environment's steps by answering them in uvicorn's WebSocket protocol itself
  (``omnienv.server.answering``); the rest of the stack (uvicorn, ``websockets``' frame parser,
  the socket) is the same.

One asyncio client process (this one, ``websockets`` library) drives every server with the same
OpenEnv frames (the loop of ``benchmarks/_clients.py``): per session, closed loop, ``reset`` then
five ``call_tool guess`` steps with valid words that are never an answer, again and again.
Sessions are opened first; steps are counted over ``--duration`` seconds after ``--warmup``. Step
latency is send-to-reply of each ``guess``.

Targets: at 64 sessions omnienv >= 4x OpenEnv's steps/s, >= 0.8x echo's, and server CPU per step
<= 1.3x echo's; single-session step latency p50 and p99 <= 0.4x OpenEnv's. Ratios are printed
against both OpenEnv variants. The
server's CPU time per step is printed too: on a shared machine steps/s mostly tells how other
processes were scheduled, while CPU per step barely moves (use ``--repeat 3`` for medians).

    python benchmarks/ws_throughput.py [--duration 5] [--levels 1,8,64] [--servers omnienv,openenv-mcp,...]

Needs the OpenEnv virtualenv (made by ``tests/peerenv.py``; this script builds it when missing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._clients import Counts, is_error, play, reset_frame, step_frames, ws_exchange
from benchmarks._harness import ServerProcess, percentile, pin_self, server_and_client_cpus
from benchmarks._servers import SERVERS, benchmark_server

__all__ = ["LevelResult", "main"]

SERVER_CPU, CLIENT_CPU = server_and_client_cpus()
TARGETS = {"openenv": 4.0, "echo": 0.8, "echo_cpu": 1.3, "latency": 0.4}
"""At the highest level: steps/s >= 4x OpenEnv's and >= 0.8x echo's, server CPU per step <= 1.3x
echo's; at the lowest, step latency p50 and p99 <= 0.4x OpenEnv's."""


# -- the client --------------------------------------------------------------------------------


@dataclass
class LevelResult:
    server: str
    sessions: int
    steps: int
    steps_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    server_cpu: float
    client_cpu: float
    server_rss_mb: float
    compression: str

    @property
    def server_us_per_step(self) -> float:
        """Server CPU time per step: unlike steps/s, barely moved by other processes on the machine."""
        return self.server_cpu / self.steps_per_s * 1e6 if self.steps_per_s else float("nan")


async def run_level(server: ServerProcess, sessions: int, duration: float, warmup: float) -> LevelResult:
    from websockets.asyncio.client import connect

    gate = asyncio.Semaphore(32)

    async def open_one() -> Any:
        async with gate:
            return await connect(server.ws_url, max_size=None, ping_interval=None, open_timeout=30)

    conns = await asyncio.gather(*(open_one() for _ in range(sessions)))
    compression = conns[0].response.headers.get("Sec-WebSocket-Extensions", "none") or "none"
    counts = Counts()
    steps = step_frames(server.name)
    try:
        start = time.perf_counter() + warmup
        stop = start + duration
        cpu0 = server.cpu_s()
        client0 = resource.getrusage(resource.RUSAGE_SELF)
        await asyncio.wait_for(
            asyncio.gather(
                *(
                    play(ws_exchange(ws), is_error, reset_frame, steps, i, (start, stop), counts)
                    for i, ws in enumerate(conns)
                )
            ),
            timeout=warmup + duration + 60,
        )
        client1 = resource.getrusage(resource.RUSAGE_SELF)
        elapsed = time.perf_counter() - (start - warmup)
        server_cpu = (server.cpu_s() - cpu0) / elapsed
        client_cpu = (client1.ru_utime + client1.ru_stime - client0.ru_utime - client0.ru_stime) / elapsed
        rss_mb = server.rss_kb() / 1024
    finally:
        await asyncio.gather(*(ws.close() for ws in conns), return_exceptions=True)
    latencies = sorted(counts.latencies)
    p50, p99 = percentile(latencies, 50) * 1e3, percentile(latencies, 99) * 1e3
    return LevelResult(
        server.name,
        sessions,
        counts.steps,
        counts.steps / duration,
        p50,
        p99,
        counts.errors,
        server_cpu,
        client_cpu,
        rss_mb,
        compression,
    )


def measure(
    names: list[str], levels: list[int], duration: float, warmup: float, repeat: int, log: Any
) -> tuple[list[list[LevelResult]], dict[str, float]]:
    """Start every server once, then take turns: each level runs on each server before the next level.

    Taking turns, rather than one server after another, spreads a noisy neighbour's load over all
    servers alike; an idle server costs nothing while the others are measured.
    """
    runs: list[list[LevelResult]] = [[] for _ in range(repeat)]
    startup: dict[str, float] = {}
    with ExitStack() as stack:
        servers = []
        for name in names:
            try:
                server = stack.enter_context(benchmark_server(name, max(levels) + 16, SERVER_CPU))
            except Exception as exc:  # one server failing must not hide the others' numbers
                log(f"[red]{name}: {type(exc).__name__}: {exc}[/red]")
                continue
            startup[name] = server.startup_s
            log(f"{name}: healthy in {server.startup_s:.2f} s (pid {server.pid})")
            servers.append(server)
        for i in range(repeat):
            for n in levels:
                for server in servers:
                    try:
                        result = asyncio.run(run_level(server, n, duration, warmup))
                    except Exception as exc:
                        log(f"[red]{server.name} at {n} sessions: {type(exc).__name__}: {exc}[/red]")
                        continue
                    log(
                        f"  run {i + 1}, {server.name:<14} {n:>3} sessions: {result.steps_per_s:>8,.0f} steps/s, "
                        f"p50 {result.p50_ms:.3f} ms, p99 {result.p99_ms:.3f} ms, errors {result.errors}"
                    )
                    runs[i].append(result)
    return runs, startup


def _median_results(runs: list[list[LevelResult]]) -> list[LevelResult]:
    """Per (server, sessions), the median of each metric over the repeats."""
    groups: dict[tuple[str, int], list[LevelResult]] = {}
    for run in runs:
        for r in run:
            groups.setdefault((r.server, r.sessions), []).append(r)
    merged = []
    for (server, sessions), rs in groups.items():

        def med(attr: str, rs: list[LevelResult] = rs) -> float:
            return float(statistics.median(getattr(r, attr) for r in rs))

        merged.append(
            LevelResult(
                server,
                sessions,
                int(med("steps")),
                med("steps_per_s"),
                med("p50_ms"),
                med("p99_ms"),
                max(r.errors for r in rs),
                med("server_cpu"),
                med("client_cpu"),
                med("server_rss_mb"),
                rs[0].compression,
            )
        )
    return merged


def report(results: list[LevelResult], startup: dict[str, float], console: Any, args: argparse.Namespace) -> int:
    from rich.table import Table

    table = Table(title=f"Wordle over /ws: {args.duration:g} s closed loop per level, one asyncio client")
    columns = (
        "server",
        "sessions",
        "steps/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "server CPU",
        "server µs/step",
        "client CPU",
        "server RSS MB",
        "deflate",
    )
    for col in columns:
        table.add_column(col, justify="left" if col in ("server", "deflate") else "right")
    for r in results:
        table.add_row(
            r.server,
            str(r.sessions),
            f"{r.steps_per_s:,.0f}",
            f"{r.p50_ms:.3f}",
            f"{r.p99_ms:.3f}",
            str(r.errors),
            f"{r.server_cpu:.2f}",
            f"{r.server_us_per_step:.0f}",
            f"{r.client_cpu:.2f}",
            f"{r.server_rss_mb:.1f}",
            "yes" if "deflate" in r.compression else "no",
        )
    console.print(table)

    by = {(r.server, r.sessions): r for r in results}
    top, low = max(args.levels), min(args.levels)
    ratios = Table(title="Ratios, each against a server measured in this run")
    for col in ("ratio", "value", "target", "verdict"):
        ratios.add_column(col)
    missed = 0

    def add(label: str, a: LevelResult | None, b: LevelResult | None, attr: str, target: float, higher: bool) -> None:
        nonlocal missed
        sign = ">=" if higher else "<="
        if a is None or b is None or not getattr(b, attr):
            ratios.add_row(label, "n/a", f"{sign} {target:.2g}x", "[yellow]not measured[/yellow]")
            return
        value = getattr(a, attr) / getattr(b, attr)
        ok = value >= target if higher else value <= target
        missed += not ok
        ratios.add_row(
            label, f"{value:.2f}x", f"{sign} {target:.2g}x", "[green]met[/green]" if ok else "[red]missed[/red]"
        )

    ours_top, ours_low = by.get(("omnienv", top)), by.get(("omnienv", low))
    targets = TARGETS
    for base in ("openenv-mcp", "openenv-plain"):
        add(
            f"steps/s at {top}: omnienv / {base}",
            ours_top,
            by.get((base, top)),
            "steps_per_s",
            targets["openenv"],
            True,
        )
    add(f"steps/s at {top}: omnienv / echo", ours_top, by.get(("echo", top)), "steps_per_s", targets["echo"], True)
    # Server CPU per step: the measure another process on the machine moves least.
    add(
        f"server CPU µs/step at {top}: omnienv / echo",
        ours_top,
        by.get(("echo", top)),
        "server_us_per_step",
        targets["echo_cpu"],
        False,
    )
    plumbing, echo_top = by.get(("omnienv-echo", top)), by.get(("echo", top))
    if plumbing is not None and echo_top is not None and echo_top.server_us_per_step:
        value = plumbing.server_us_per_step / echo_top.server_us_per_step
        ratios.add_row(
            f"server CPU µs/step at {top}: omnienv-echo / echo (omnienv's own work, next to no game)",
            f"{value:.2f}x",
            "",
            "for scale",
        )
    for base in ("openenv-mcp", "openenv-plain"):
        add(
            f"server CPU µs/step at {top}: omnienv / {base}",
            ours_top,
            by.get((base, top)),
            "server_us_per_step",
            1 / targets["openenv"],
            False,
        )
    for base in ("openenv-mcp", "openenv-plain"):
        for attr in ("p50_ms", "p99_ms"):
            add(
                f"{attr[:3]} at {low}: omnienv / {base}", ours_low, by.get((base, low)), attr, targets["latency"], False
            )
    # The stack's own limit, for scale: what the bare echo server's latency is to OpenEnv's. A target
    # at or below it cannot be met by any server on this stack and machine.
    echo_low = by.get(("echo", low))
    for base in ("openenv-mcp", "openenv-plain"):
        theirs = by.get((base, low))
        for attr in ("p50_ms", "p99_ms"):
            if echo_low is not None and theirs is not None and getattr(theirs, attr):
                value = getattr(echo_low, attr) / getattr(theirs, attr)
                ratios.add_row(
                    f"{attr[:3]} at {low}: echo / {base} (the stack's limit)", f"{value:.2f}x", "", "for scale"
                )
    console.print(ratios)
    if startup:
        console.print("startup to healthy: " + ", ".join(f"{k} {v:.2f} s" for k, v in startup.items()))
    return missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="measured seconds per level")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each level")
    parser.add_argument("--levels", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8, 64])
    parser.add_argument("--servers", type=lambda s: s.split(","), default=list(SERVERS))
    parser.add_argument("--repeat", type=int, default=1, help="runs per server; medians are reported")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and client to CPUs")
    args = parser.parse_args()

    from rich.console import Console

    console = Console(width=max(Console().width, 150))
    if args.no_pin:
        global SERVER_CPU, CLIENT_CPU
        SERVER_CPU = CLIENT_CPU = None  # type: ignore[assignment]
    pin_self(CLIENT_CPU)
    console.print(
        f"servers on CPU {SERVER_CPU}, client on CPU {CLIENT_CPU}"
        if SERVER_CPU is not None
        else "servers and client not pinned to CPUs"
    )
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    runs, startup = measure(args.servers, args.levels, args.duration, args.warmup, args.repeat, console.print)
    results = _median_results(runs)
    results.sort(key=lambda r: (args.servers.index(r.server), r.sessions))
    if args.json:
        payload = {
            "results": [asdict(r) for r in results],
            "runs": [[asdict(r) for r in run] for run in runs],
            "startup_s": startup,
        }
        args.json.write_text(json.dumps(payload, indent=1))
    report(results, startup, console, args)


if __name__ == "__main__":
    main()
