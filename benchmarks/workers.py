"""``omnienv serve --workers N``: Wordle steps/s from 1 to N workers, and no session misrouted.

For each worker count (default 1, 2, 4... up to this machine's cores, ``--workers 1,2,4``
to choose) one server runs (``omnienv serve wordle --workers N``), and ``--clients``
client processes drive it, closed loop (``benchmarks/_clients.py``), so that the client is not
what limits a big machine.
Each session plays ``reset`` then five ``guess`` steps with valid words that are never the
answer, again and again; steps are counted over ``--duration`` seconds after ``--warmup``.
Three ways in, every one checked for routing:

- ``ws``: a new session per WebSocket (``/ws``), the fast path: a session lives on the worker
  that accepted its connection, so there is nothing to route;
- ``ws-attach``: sessions made with ``POST /sessions``, then played over ``/ws?session_id=``: a
  socket accepted by another worker is proxied to the owner;
- ``http``: the stateful HTTP routes over a pool of keep-alive connections per client shared by
  its sessions (as a trainer's HTTP client does), so most requests land on a worker that does not
  own their session and are forwarded.

Sessions made over HTTP live where their ``POST /sessions`` landed, so the clients make them over
a pool of connections (which the kernel spreads over the workers).

Every reply names the worker that served it (``x-omnienv-worker``): a reply for a session from
any worker but its owner (``omnienv.server.workers.WorkerPlace.owner``) counts as **misrouted**,
which must be 0 (a WebSocket's frames count with its handshake's worker). ``forwarded`` is the
share of replies that went through a second worker.
Server CPU per step (all processes of the server) shows the cost of forwarding whatever else
runs on the machine. Targets: misrouted 0 everywhere; steps/s at N workers >= 0.7 x N times the
1-worker rate over ``ws``, >= 0.4 x N over ``ws-attach`` and ``http`` (they pay for forwarding),
judged only where the machine has a core for every worker and every client process.

    python benchmarks/workers.py [--workers 1,2,4,8] [--clients 4] [--sessions 64] [--duration 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Awaitable
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._clients import Counts, is_error, play, reset_frame, step_frames, ws_exchange
from benchmarks._harness import OMNIENV, ServerProcess, free_port, percentile, raise_fd_limit
from benchmarks._http1 import Http1, Pool
from benchmarks._proc import tree_cpu_s

__all__ = ["Level", "main"]

TRANSPORTS = ("ws", "ws-attach", "http")
TARGETS = {"ws": 0.7, "ws-attach": 0.4, "http": 0.4}
"""Steps/s at N workers over steps/s at one, per worker: the scaling each transport should reach."""


@dataclass
class Level:
    transport: str
    workers: int
    sessions: int
    clients: int
    steps: int = 0
    steps_per_s: float = 0.0
    p50_ms: float = float("nan")
    replies: int = 0
    forwarded: int = 0
    misrouted: int = 0
    errors: int = 0
    owners: list[int] = field(default_factory=list)
    """Sessions per worker, as the replies named them."""
    server_cpu_s: float = 0.0

    @property
    def server_us_per_step(self) -> float:
        return self.server_cpu_s / self.steps * 1e6 if self.steps else float("nan")


# -- the client processes -----------------------------------------------------------------------


class Tally(Counts):
    """What one client process saw: the loops' counts, and every reply's worker."""

    def __init__(self, workers: int) -> None:
        from omnienv.server.workers import WorkerPlace

        super().__init__()
        self.rule = WorkerPlace(0, workers, "")
        self.replies = self.forwarded = self.misrouted = 0
        self.owners = [0] * workers

    def reply(self, session: str | None, served: str | None, via: str | None) -> None:
        """One reply for ``session`` (None: a new WebSocket's, owned where it landed), from ``served``."""
        self.replies += 1
        self.forwarded += via is not None
        worker = int(served) if served is not None else 0  # one worker: no header, worker 0
        if session is not None and worker != self.rule.owner(session):
            self.misrouted += 1

    def result(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k != "rule"}


def _play_ws(ws: Any, session: str | None, index: int, tally: Tally, window: tuple[float, float]) -> Awaitable[None]:
    served = ws.response.headers.get("x-omnienv-worker")  # every frame on a socket: its handshake's worker
    via = ws.response.headers.get("x-omnienv-via")
    tally.reply(session, served, via)

    def failed(reply: str | bytes) -> bool:
        tally.reply(session, served, via)
        return is_error(reply)

    return play(ws_exchange(ws), failed, reset_frame, step_frames(), index, window, tally)


def _play_http(pool: Pool, session: str, index: int, tally: Tally, window: tuple[float, float]) -> Awaitable[None]:
    path = f"/sessions/{session}"
    steps = [(f"{path}/step", json.dumps(json.loads(frame)["data"]).encode()) for frame in step_frames()]

    def reset(seed: int) -> tuple[str, bytes]:
        return f"{path}/reset", json.dumps({"seed": seed}).encode()

    async def exchange(request: tuple[str, bytes]) -> tuple[int, dict[str, str], bytes]:
        return await pool.request("POST", *request)  # any free connection of the pool

    def failed(reply: tuple[int, dict[str, str], bytes]) -> bool:
        status, headers, _ = reply
        tally.reply(session, headers.get("x-omnienv-worker"), headers.get("x-omnienv-via"))
        return status != 200

    return play(exchange, failed, reset, steps, index, window, tally)


async def _client(
    conn: Connection, port: int, transport: str, sessions: int, first: int, workers: int
) -> dict[str, Any]:
    from websockets.asyncio.client import connect

    tally = Tally(workers)
    pool = Pool([await Http1.open(port) for _ in range(max(1, min(8, sessions)))])

    async def new_session() -> str:  # on the worker its connection landed on: spread by the pool
        status, headers, body = await pool.request("POST", "/sessions")
        if status != 201:
            raise RuntimeError(f"POST /sessions answered {status}: {body[:200]!r}")
        session: str = json.loads(body)["session_id"]
        tally.reply(session, headers.get("x-omnienv-worker"), headers.get("x-omnienv-via"))
        return session

    names: list[str | None] = [None] * sessions
    sockets: list[Any] = []
    if transport != "ws":
        names = [await new_session() for _ in range(sessions)]
    if transport != "http":
        url = f"ws://127.0.0.1:{port}/ws"
        for name in names:
            target = url if name is None else f"{url}?session_id={name}"
            sockets.append(await connect(target, compression=None, max_size=None, ping_interval=None, open_timeout=60))
    tally.owners = [0] * workers
    for ws, name in zip(sockets or [None] * sessions, names, strict=True):
        served = ws.response.headers.get("x-omnienv-worker") if ws is not None else None
        owner = tally.rule.owner(name) if name is not None else int(served or 0)
        tally.owners[owner] += 1
    conn.send("ready")
    start, stop = await asyncio.get_running_loop().run_in_executor(None, conn.recv)
    try:
        if transport == "http":
            plays = [_play_http(pool, name, first + i, tally, (start, stop)) for i, name in enumerate(names) if name]
        else:
            plays = [
                _play_ws(ws, name, first + i, tally, (start, stop))
                for i, (ws, name) in enumerate(zip(sockets, names, strict=True))
            ]
        await asyncio.gather(*plays)
    finally:
        await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
        pool.close()
    return tally.result()


def client_main(conn: Connection, port: int, transport: str, sessions: int, first: int, workers: int) -> None:
    """One client process: open its sessions, say ready, play when told, send back its tally."""
    try:
        import uvloop

        run: Any = uvloop.run
    except ImportError:
        run = asyncio.run
    try:
        conn.send(run(_client(conn, port, transport, sessions, first, workers)))
    except Exception as exc:
        conn.send({"failed": f"{type(exc).__name__}: {exc}"})


# -- one level ------------------------------------------------------------------------------------


def run_level(transport: str, workers: int, sessions: int, clients: int, duration: float, warmup: float) -> Level:
    port = free_port()
    command = [OMNIENV, "serve", "wordle", "--port", str(port), "--workers", str(workers), "--no-ui"]
    command += ["--max-sessions", str(max(sessions * 2 + 64, workers))]
    level = Level(transport, workers, sessions, clients)
    context = multiprocessing.get_context("spawn")
    with ServerProcess(f"omnienv-{workers}w", command, port) as server:
        pipes, processes = [], []
        shares = [sessions // clients + (i < sessions % clients) for i in range(clients)]
        for i, share in enumerate(shares):
            ours, theirs = context.Pipe()
            process = context.Process(
                target=client_main, args=(theirs, port, transport, share, sum(shares[:i]), workers)
            )
            process.start()
            pipes.append(ours)
            processes.append(process)
        try:
            for pipe in pipes:
                ready = pipe.recv()
                if ready != "ready":
                    raise RuntimeError(f"a client failed to open its sessions: {ready}")
            start = time.perf_counter() + warmup  # perf_counter is the same clock in every process (CLOCK_MONOTONIC)
            stop = start + duration
            for pipe in pipes:
                pipe.send((start, stop))
            time.sleep(max(0.0, start - time.perf_counter()))  # the measured window's edges, not a wait for readiness
            cpu0 = tree_cpu_s(server.pid)
            time.sleep(max(0.0, stop - time.perf_counter()))
            level.server_cpu_s = tree_cpu_s(server.pid) - cpu0
            tallies = [pipe.recv() for pipe in pipes]
        finally:
            for process in processes:
                process.join(30)
                if process.is_alive():
                    process.kill()
    failed = [t["failed"] for t in tallies if "failed" in t]
    if failed:
        raise RuntimeError("; ".join(failed))
    latencies = sorted(x for t in tallies for x in t["latencies"])
    level.steps = sum(t["steps"] for t in tallies)
    level.steps_per_s = level.steps / duration
    level.p50_ms = percentile(latencies, 50) * 1e3
    for key in ("replies", "forwarded", "misrouted", "errors"):
        setattr(level, key, sum(t[key] for t in tallies))
    level.owners = [sum(t["owners"][w] for t in tallies) for w in range(workers)]
    return level


# -- the report -----------------------------------------------------------------------------------


def verdict(level: Level, base: Level | None, cores: int) -> tuple[str, str, bool]:
    """``(ratio, verdict, missed)`` of one row: misrouted and errors must be 0 everywhere; the
    scaling is judged where every worker and every client process has a core of its own."""
    ratio = level.steps_per_s / base.steps_per_s if base is not None and base.steps_per_s else float("nan")
    shown = f"{ratio:.2f}x" if ratio == ratio else "n/a"
    wrong = [f"{level.misrouted} misrouted"] * bool(level.misrouted) + [f"{level.errors} errors"] * bool(level.errors)
    if wrong:
        return shown, f"[red]missed: {', '.join(wrong)}[/red]", True
    if level.workers == 1:
        return shown, "[green]met[/green] (baseline)", False
    need = level.workers + level.clients
    if need > cores:
        return (
            shown,
            f"[green]0 misrouted[/green]; scaling [yellow]not judged[/yellow]: {need} processes, {cores} cores",
            False,
        )
    target = TARGETS[level.transport] * level.workers
    if ratio >= target:
        return shown, "[green]met[/green]", False
    return shown, f"[red]missed[/red]: scaling {ratio:.2f}x < {target:.2g}x", True


def report(levels: list[Level], console: Any, duration: float) -> int:
    from rich.table import Table

    cores = os.cpu_count() or 1
    table = Table(title=f"omnienv serve wordle --workers N: {duration:g} s closed loop per row, {cores} cores here")
    for column in (
        "transport",
        "workers",
        "sessions per worker",
        "steps/s",
        "vs 1 worker",
        "target",
        "server µs/step",
        "p50 ms",
        "forwarded",
        "misrouted",
        "errors",
        "verdict",
    ):
        table.add_column(column, justify="left" if column in ("transport", "target", "verdict") else "right")
    base = {level.transport: level for level in levels if level.workers == 1}
    missed = 0
    for level in levels:
        ratio, said, bad = verdict(level, base.get(level.transport), cores)
        missed += bad
        target = (
            "misrouted 0" if level.workers == 1 else f">= {TARGETS[level.transport] * level.workers:.2g}x; misrouted 0"
        )
        table.add_row(
            level.transport,
            str(level.workers),
            "/".join(map(str, level.owners)),
            f"{level.steps_per_s:,.0f}",
            ratio,
            target,
            f"{level.server_us_per_step:.0f}",
            f"{level.p50_ms:.2f}",
            f"{level.forwarded / level.replies:.0%}" if level.replies else "n/a",
            str(level.misrouted),
            str(level.errors),
            said,
        )
    console.print(table)
    return missed


def default_counts(cores: int) -> list[int]:
    counts = [1]
    while counts[-1] * 2 <= cores:
        counts.append(counts[-1] * 2)
    return counts if counts[-1] == cores else [*counts, cores]


def main() -> None:
    cores = os.cpu_count() or 1
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers",
        type=lambda s: [int(x) for x in s.split(",")],
        default=default_counts(cores),
        help="worker counts, comma-separated (default: 1, 2, 4... up to the cores)",
    )
    parser.add_argument(
        "--clients", type=int, default=max(1, cores // 2), help="client processes (default: half the cores)"
    )
    parser.add_argument(
        "--sessions", type=int, default=0, help="sessions in all (default: 16 per worker of the most, >= 64)"
    )
    parser.add_argument("--transports", type=lambda s: s.split(","), default=list(TRANSPORTS))
    parser.add_argument("--duration", type=float, default=5.0, help="measured seconds per row")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each row")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    if unknown := set(args.transports) - set(TRANSPORTS):
        parser.error(f"unknown transports {sorted(unknown)}; choose from {', '.join(TRANSPORTS)}")
    if min(args.workers) < 1 or args.clients < 1:
        parser.error("--workers and --clients must be >= 1")
    sessions = args.sessions or max(64, 16 * max(args.workers))
    clients = min(args.clients, sessions)

    from rich.console import Console

    console = Console(width=max(Console().width, 170))
    raise_fd_limit(4 * sessions + 1024)
    levels = []
    for transport in args.transports:
        for workers in sorted(set(args.workers)):
            try:
                level = run_level(transport, workers, sessions, clients, args.duration, args.warmup)
            except Exception as exc:  # one row failing must not hide the others
                console.print(f"[red]{transport} at {workers} workers: {type(exc).__name__}: {exc}[/red]")
                continue
            console.print(
                f"  {transport:<9} {workers:>3} workers: {level.steps_per_s:>9,.0f} steps/s, "
                f"{level.misrouted} misrouted of {level.replies:,} replies, {level.forwarded:,} forwarded"
            )
            levels.append(level)
    if args.json:
        args.json.write_text(json.dumps([asdict(level) for level in levels], indent=1))
    missed = report(levels, console, args.duration)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
