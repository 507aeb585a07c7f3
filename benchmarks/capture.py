"""The capture proxy's cost: added latency per model call, and a multi-call episode's wall time.

The scripted vLLM-like endpoint (:mod:`omnienv.rollout.scripted_openai`, token ids and
log-probabilities on) runs in one process, ``omnienv proxy`` in front of it in another, and this
process is the harness. The model answers at once, so every millisecond measured is transport and
proxy work: the worst case for the proxy (a real model call takes 100 ms to minutes).

1. Per call: ``--calls`` chat completions (whole and streamed) alternately direct and through the
   proxy on kept-alive connections; p50/p95 of each, and of the added time (proxy minus the direct
   call made just before it). Target: p50 added <= 1 ms.
2. Per episode: ``--episodes`` tool-loop episodes of ``--turns`` calls through the real ``openai``
   client, alternately direct and through the proxy; the ratio of their wall times.

The direct calls ask for the token fields themselves (the proxy adds them to the proxied ones), so
the upstream does the same work on both sides and the difference is the proxy's alone.

Timings are noisy on a loaded machine: run it on idle cores and read the spread, not one number.

    python benchmarks/capture.py [--calls 2000] [--episodes 40] [--turns 8]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._harness import OMNIENV, percentile

__all__ = ["main"]

TARGET_MS = 1.0
TOOLS = [{"type": "function", "function": {"name": "guess", "parameters": {"type": "object"}}}]


def responder_for(turns: int) -> Any:
    from omnienv.rollout.scripted_openai import observations

    def responder(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        seen = len(observations(messages))
        return [("guess", {"word": f"crane{seen}"})] if seen < turns - 1 else []

    return responder


def serve_upstream(turns: int) -> None:
    """The scripted endpoint on a free port; prints ``PORT n`` once it listens."""
    import uvicorn

    from omnienv.rollout.scripted_openai import create_app
    from omnienv.server.run import uvicorn_config

    listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
    port = listener.getsockname()[1]
    print(f"PORT {port}", flush=True)
    uvicorn.Server(uvicorn_config(create_app(responder_for(turns)), "127.0.0.1", port)).run(sockets=[listener])


@contextmanager
def spawned(command: list[str], marker: str) -> Iterator[str]:
    """Run a server process (its own process group, always reaped); yields its first line with ``marker``."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the servers print this once their port listens
        if marker not in line:
            raise RuntimeError(f"{command[:3]} did not start: {line!r}")
        yield line
    finally:
        with_group = os.getpgid(proc.pid) if proc.poll() is None else None
        if with_group is not None:
            os.killpg(with_group, signal.SIGTERM)
        proc.wait(timeout=20)


def conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Let's play Wordle. Guess a five-letter word."}]
    for n in range(turns):
        call = {"id": f"call_{n}", "type": "function", "function": {"name": "guess", "arguments": '{"word": "crane"}'}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": "C:absent R:present A:correct N:absent E:absent"},
        ]
    return messages


def per_call(direct: str, proxied: str, calls: int, stream: bool) -> dict[str, list[float]]:
    """Alternate direct and proxied calls; milliseconds of each, and the added time of each pair."""
    import httpx

    body = {"model": "scripted", "messages": conversation(3), "tools": TOOLS, "stream": stream}
    # The direct call asks for the token fields itself, so the upstream does the same work both ways
    # and the difference is the proxy's alone.
    asking = body | {"logprobs": True, "return_token_ids": True}
    if stream:
        asking["stream_options"] = {"include_usage": True}
    times: dict[str, list[float]] = {"direct": [], "proxy": [], "added": []}
    with httpx.Client(timeout=30.0) as client:

        def call(base: str) -> float:
            sent = asking if base == direct else body
            start = time.perf_counter()
            if stream:
                with client.stream("POST", f"{base}/chat/completions", json=sent) as answer:
                    for _ in answer.iter_bytes():
                        pass
            else:
                answer = client.post(f"{base}/chat/completions", json=sent)
                answer.read()
            assert answer.status_code == 200, answer.text
            return (time.perf_counter() - start) * 1000

        for _ in range(max(50, calls // 20)):  # warm connections, caches and the JIT-less interpreter
            call(direct), call(proxied)
        for _ in range(calls):
            a, b = call(direct), call(proxied)
            times["direct"].append(a)
            times["proxy"].append(b)
            times["added"].append(b - a)
    return times


def episode(base: str, turns: int, asking: bool) -> int:
    """One tool loop through the openai client; ``asking``: it asks for the token fields itself (the
    direct side, so that the upstream's work is the same as behind the proxy)."""
    from openai import OpenAI

    model = OpenAI(base_url=base, api_key="local", max_retries=0)
    fields: dict[str, Any] = {"logprobs": True, "extra_body": {"return_token_ids": True}} if asking else {}
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Let's play."}]
    for made in range(1, turns + 2):
        answer = model.chat.completions.create(model="scripted", messages=messages, tools=TOOLS, **fields)
        message = answer.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return made
        for tool_call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": "C:absent R:present"})
    raise RuntimeError("the episode did not end")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per mode, each side")
    parser.add_argument("--episodes", type=int, default=40, help="episodes each side")
    parser.add_argument("--turns", type=int, default=8, help="model calls per episode")
    parser.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.turns)
        return

    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 120))
    upstream_cmd = [sys.executable, str(Path(__file__).resolve()), "--serve-upstream", "--turns", str(args.turns)]
    with spawned(upstream_cmd, "PORT") as line:
        direct = f"http://127.0.0.1:{line.split()[1]}/v1"
        with spawned([OMNIENV, "proxy", "--upstream", direct, "--port", "0"], "capture proxy") as announced:
            proxied = announced.split(" at ", 1)[1].split()[0].removesuffix("/v1") + "/episodes/bench/v1"
            console.print(f"upstream {direct}, proxy {proxied}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
            table = Table(title=f"Added latency per chat call, {args.calls} calls each side (ms)")
            for col in ("call", "direct p50", "direct p95", "proxy p50", "proxy p95", "added p50", "added p95"):
                table.add_column(col, justify="right")
            verdicts = []
            for stream in (False, True):
                t = {k: sorted(v) for k, v in per_call(direct, proxied, args.calls, stream).items()}
                name = "streamed" if stream else "whole"
                cells = [f"{percentile(t[k], q):.3f}" for k in ("direct", "proxy", "added") for q in (50, 95)]
                table.add_row(name, *cells)
                added = percentile(t["added"], 50)
                verdicts.append(f"{name}: p50 added {added:.3f} ms ({'meets' if added <= TARGET_MS else 'misses'})")
            console.print(table)
            console.print(f"target p50 added <= {TARGET_MS} ms — " + "; ".join(verdicts))

            walls: dict[str, list[float]] = {"direct": [], "proxy": []}
            made = 0
            episode(direct, args.turns, True), episode(proxied, args.turns, False)  # warm both paths
            for _ in range(args.episodes):
                for side, base in (("direct", direct), ("proxy", proxied)):
                    start = time.perf_counter()
                    made = episode(base, args.turns, base == direct)
                    walls[side].append(time.perf_counter() - start)
    d, p = statistics.median(walls["direct"]), statistics.median(walls["proxy"])
    total_d, total_p = sum(walls["direct"]), sum(walls["proxy"])
    console.print(
        f"episode of {made} calls via the openai client, {args.episodes} each side: median wall "
        f"{d * 1000:.1f} ms direct vs {p * 1000:.1f} ms through the proxy = {p / d:.2f}x "
        f"(total {total_p / total_d:.2f}x; {(p - d) / made * 1000:.2f} ms added per call). "
        "The model answers instantly here: with a real one the ratio tends to 1."
    )


if __name__ == "__main__":
    main()
