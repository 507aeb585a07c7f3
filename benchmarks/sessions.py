"""Many idle sessions and a cold start: omnienv's Wordle server against OpenEnv 0.10.0's.

1. Start-up: spawn the server process and time it until ``GET /health`` answers 200 (median of
   ``--startup-runs``, after one start not counted that fills the bytecode cache as a ``pip
   install`` would), for omnienv and for the OpenEnv Wordle (benchmarks/openenv_wordle).
2. Idle sessions: open ``--sessions`` WebSocket sessions at once (each connects, sends ``reset``
   and reads the observation, then stays open and silent), and read the server's RSS before and
   after. RSS per idle session = growth / sessions. The server is warmed with one session first, so
   one-off lazy loading (word lists, imports) is not charged to the sessions.

Clients offer permessage-deflate by default (OpenEnv's client does, through ``websockets``), and a
server that accepts keeps two zlib contexts per session, so omnienv is measured both ways: with a
client offering deflate, like OpenEnv's, and with one that does not. The bare echo server of
ws_throughput.py (Starlette on uvicorn, no session state) is printed for scale.
OpenEnv keeps one OS thread per session, so it gets ``--openenv-sessions`` (default 1,000).
Targets: 10,000 sessions at <= 16 KB RSS each and start-up to healthy <= 0.3 s.

    python benchmarks/sessions.py [--sessions 10000] [--openenv-sessions 1000] [--startup-runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._clients import is_error, reset_frame
from benchmarks._harness import ServerProcess, raise_fd_limit
from benchmarks._servers import benchmark_server

__all__ = ["SessionsResult", "main"]

RSS_TARGET_KB = 16.0
STARTUP_TARGET_S = 0.3
RESET = reset_frame(1)


def spec(name: str, max_sessions: int, idle_timeout: float) -> ServerProcess:
    return benchmark_server(name, max_sessions, None, "--idle-timeout", str(idle_timeout))


@dataclass
class SessionsResult:
    label: str
    server: str
    deflate_offered: bool
    deflate: bool
    wanted: int
    opened: int
    failed: int
    open_s: float
    rss_idle_mb: float
    rss_open_mb: float
    kb_per_session: float
    threads_idle: int
    threads_open: int
    first_error: str


async def _open_sessions(url: str, count: int, deadline_s: float, deflate: bool) -> tuple[list[Any], int, str, float]:
    """Open ``count`` sessions, each after a ``reset`` reply; returns (sockets, failures, first error, seconds)."""
    from websockets.asyncio.client import connect

    gate = asyncio.Semaphore(256)
    failures = 0
    first_error = ""

    async def one() -> Any:
        nonlocal failures, first_error
        async with gate:
            try:
                ws = await connect(url, ping_interval=None, open_timeout=60, compression="deflate" if deflate else None)
            except Exception as exc:
                failures += 1
                first_error = first_error or f"connect: {type(exc).__name__}: {exc}"
                return None
            try:
                await ws.send(RESET)
                reply = await ws.recv()
                if is_error(reply):
                    raise RuntimeError(str(reply)[:200])
                return ws
            except Exception as exc:
                failures += 1
                first_error = first_error or f"reset: {type(exc).__name__}: {exc}"
                await ws.close()
                return None

    t0 = time.perf_counter()
    tasks = [asyncio.ensure_future(one()) for _ in range(count)]
    done, pending = await asyncio.wait(tasks, timeout=deadline_s)
    for task in pending:
        task.cancel()
    socks = [t.result() for t in done if not t.cancelled() and t.exception() is None and t.result() is not None]
    failures += len(pending)
    if pending:
        first_error = first_error or f"{len(pending)} sessions not open within {deadline_s} s"
    return socks, failures, first_error, time.perf_counter() - t0


async def _settled_rss(server: ServerProcess) -> int:
    """RSS once it stops moving (allocation lags the last reply a little); bounded wait."""
    last = server.rss_kb()
    for _ in range(20):
        await asyncio.sleep(0.05)
        now = server.rss_kb()
        if abs(now - last) < 64:
            return now
        last = now
    return last


async def idle_sessions(
    label: str, server: ServerProcess, count: int, deadline_s: float, deflate: bool
) -> SessionsResult:
    warm, _, error, _ = await _open_sessions(server.ws_url, 1, 30, deflate)
    if not warm:
        raise RuntimeError(f"{server.name}: could not open a first session: {error}")
    await warm[0].close()
    rss0, threads0 = await _settled_rss(server), server.threads()
    socks, failures, error, seconds = await _open_sessions(server.ws_url, count, deadline_s, deflate)
    negotiated = bool(socks) and "deflate" in (socks[0].response.headers.get("Sec-WebSocket-Extensions") or "")
    try:
        rss1, threads1 = await _settled_rss(server), server.threads()
    finally:
        await asyncio.gather(*(ws.close() for ws in socks), return_exceptions=True)
    per = (rss1 - rss0) / len(socks) if socks else float("nan")
    return SessionsResult(
        label,
        server.name,
        deflate,
        negotiated,
        count,
        len(socks),
        failures,
        seconds,
        rss0 / 1024,
        rss1 / 1024,
        per,
        threads0,
        threads1,
        error,
    )


def _deflate(result: SessionsResult) -> str:
    if not result.deflate_offered:
        return "not offered"
    return "offered, accepted" if result.deflate else "offered, refused"


def startup_times(name: str, runs: int) -> list[float]:
    with spec(name, 64, 600):  # not counted: compiles what is not compiled yet, warms the file cache
        pass
    times = []
    for _ in range(runs):
        with spec(name, 64, 600) as server:
            times.append(server.startup_s)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument(
        "--openenv-sessions", type=int, default=1_000, help="OpenEnv holds a thread per session; 0 skips it"
    )
    parser.add_argument("--openenv-variant", choices=("plain", "mcp"), default="plain")
    parser.add_argument("--startup-runs", type=int, default=5)
    parser.add_argument("--no-floor", dest="floor", action="store_false", help="skip the echo server")
    parser.add_argument("--deadline", type=float, default=180.0, help="seconds allowed to open the sessions")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    console = Console(width=max(Console().width, 150))
    limit = raise_fd_limit(2 * max(args.sessions, args.openenv_sessions) + 4096)
    console.print(f"open-file limit {limit} (client and servers)")
    openenv = f"openenv-{args.openenv_variant}"

    startup: dict[str, list[float]] = {}
    for name in ("omnienv", openenv):
        try:
            startup[name] = startup_times(name, args.startup_runs)
            console.print(f"{name}: start-up {', '.join(f'{t:.2f}' for t in startup[name])} s")
        except Exception as exc:
            console.print(f"[red]{name} start-up: {type(exc).__name__}: {exc}[/red]")

    results: list[SessionsResult] = []
    cases = [
        ("omnienv", "omnienv", args.sessions, True),
        ("omnienv", "omnienv", args.sessions, False),
        ("starlette echo", "echo", args.sessions if args.floor else 0, False),
        (openenv, openenv, args.openenv_sessions, True),
    ]
    for label, name, count, deflate in cases:
        if count <= 0:
            continue
        try:
            with spec(name, count + 64, 3600) as server:
                result = asyncio.run(idle_sessions(label, server, count, args.deadline, deflate))
        except Exception as exc:
            console.print(f"[red]{label}: {type(exc).__name__}: {exc}[/red]")
            continue
        console.print(
            f"{label}: {result.opened:,}/{count:,} sessions open in {result.open_s:.1f} s, "
            f"{result.kb_per_session:.1f} KB each"
            + (f" ({result.failed} failed: {result.first_error})" if result.failed else "")
        )
        results.append(result)

    table = Table(title="Idle sessions (connect + reset, then silent)")
    for col in (
        "server",
        "deflate",
        "sessions open",
        "failed",
        "open time s",
        "RSS idle MB",
        "RSS open MB",
        "KB / session",
        "threads idle -> open",
        "start-up s (median)",
    ):
        table.add_column(col, justify="left" if col in ("server", "deflate") else "right")
    for r in results:
        median = statistics.median(startup[r.server]) if startup.get(r.server) else float("nan")
        table.add_row(
            r.label,
            _deflate(r),
            f"{r.opened:,}/{r.wanted:,}",
            str(r.failed),
            f"{r.open_s:.1f}",
            f"{r.rss_idle_mb:.1f}",
            f"{r.rss_open_mb:.1f}",
            f"{r.kb_per_session:.1f}",
            f"{r.threads_idle} -> {r.threads_open}",
            f"{median:.2f}",
        )
    console.print(table)

    verdicts = Table(title="Targets (DESIGN.md)")
    for col in ("measure", "value", "target", "verdict"):
        verdicts.add_column(col)

    def verdict(ok: bool) -> str:
        return "[green]met[/green]" if ok else "[red]missed[/red]"

    for ours in (r for r in results if r.server == "omnienv"):
        full = ours.opened == ours.wanted
        verdicts.add_row(
            f"{ours.label}, deflate {_deflate(ours)}: sessions open",
            f"{ours.opened:,}",
            f"{ours.wanted:,}",
            verdict(full),
        )
        verdicts.add_row(
            f"{ours.label}, deflate {_deflate(ours)}: RSS per idle session",
            f"{ours.kb_per_session:.1f} KB",
            f"<= {RSS_TARGET_KB:g} KB",
            verdict(ours.kb_per_session <= RSS_TARGET_KB),
        )
    if startup.get("omnienv"):
        median = statistics.median(startup["omnienv"])
        verdicts.add_row(
            "omnienv start-up to healthy (bytecode compiled)",
            f"{median:.2f} s",
            f"<= {STARTUP_TARGET_S:g} s",
            verdict(median <= STARTUP_TARGET_S),
        )
        if startup.get(openenv):
            ratio = median / statistics.median(startup[openenv])
            verdicts.add_row(f"start-up omnienv / {openenv}", f"{ratio:.2f}x", "(lower is better)", "")
    ours = next((r for r in results if r.server == "omnienv" and r.deflate_offered), None)
    theirs = next((r for r in results if r.server == openenv), None)
    if ours is not None and theirs is not None and theirs.kb_per_session > 0:
        verdicts.add_row(
            f"RSS per session omnienv / {openenv} (both with deflate offered)",
            f"{ours.kb_per_session / theirs.kb_per_session:.2f}x",
            "(lower is better)",
            "",
        )
    console.print(verdicts)
    if args.json:
        args.json.write_text(json.dumps({"sessions": [asdict(r) for r in results], "startup_s": startup}, indent=1))


if __name__ == "__main__":
    main()
