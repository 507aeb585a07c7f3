"""The capture proxy's cost: added latency per model call, and rollout wall time against calling the model directly.

The scripted vLLM-like endpoint (:mod:`omnienv.rollout.scripted_openai`, token ids and
log-probabilities on) runs in its own process, ``omnienv proxy`` in front of it in another, and this
process is the harness. Two upstreams run side by side, each with its proxy:

1. Per call, against a model that answers at once (every millisecond measured is transport and
   proxy work, the worst case for the proxy): ``--calls`` chat completions, whole and streamed,
   alternately direct and through the proxy on kept-alive connections; p50/p95 of each, and of the
   added time (each proxied call minus the direct call made just before it). Target: p50 added <= 1 ms.
2. Per rollout, against a model that takes a fixed ``--model-ms`` per call (the scripted endpoint
   answers after that delay, as a real model's generation would take): ``--episodes`` tool-loop
   episodes of ``--turns`` calls through the real ``openai`` client, alternately direct and through
   the proxy; the wall-time overhead of the proxied ones. Target: <= 5%. The same episodes against
   the instant model are printed beside them, the worst case, without a target.

The direct calls ask for the token fields themselves (the proxy adds them to the proxied ones), so
the upstream does the same work on both sides and the difference is the proxy's alone.

Timings are noisy on a loaded machine: run it on idle cores and read the spread, not one number.

    python benchmarks/capture.py [--calls 2000] [--episodes 10] [--turns 8] [--model-ms 100]
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
TARGET_OVERHEAD = 0.05
TOOLS = [{"type": "function", "function": {"name": "guess", "parameters": {"type": "object"}}}]


def responder_for(turns: int) -> Any:
    from omnienv.rollout.scripted_openai import observations

    def responder(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        seen = len(observations(messages))
        return [("guess", {"word": f"crane{seen}"})] if seen < turns - 1 else []

    return responder


def serve_upstream(turns: int, model_ms: float) -> None:
    """The scripted endpoint on a free port, each answer ``model_ms`` late; prints ``PORT n`` once it listens."""
    import uvicorn

    from omnienv.rollout.scripted_openai import Faults, create_app
    from omnienv.server.run import uvicorn_config

    faults = Faults(stall_every=1, stall_s=model_ms / 1000) if model_ms > 0 else Faults()
    listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
    port = listener.getsockname()[1]
    print(f"PORT {port}", flush=True)
    app = create_app(responder_for(turns), faults)
    uvicorn.Server(uvicorn_config(app, "127.0.0.1", port)).run(sockets=[listener])


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


@contextmanager
def model_and_proxy(turns: int, model_ms: float) -> Iterator[tuple[str, str]]:
    """A scripted upstream (answering ``model_ms`` late) and ``omnienv proxy`` in front of it:
    the direct base URL and the proxied one (an episode's)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--serve-upstream", "--turns", str(turns)]
    with spawned([*command, "--model-ms", str(model_ms)], "PORT") as line:
        direct = f"http://127.0.0.1:{line.split()[1]}/v1"
        with spawned([OMNIENV, "proxy", "--upstream", direct, "--port", "0"], "capture proxy") as announced:
            yield direct, announced.split(" at ", 1)[1].split()[0].removesuffix("/v1") + "/episodes/bench/v1"


def rollouts(direct: str, proxied: str, episodes: int, turns: int) -> tuple[list[float], list[float], int]:
    """Wall seconds of each episode, direct and proxied (alternately), and the calls an episode made."""
    walls: dict[str, list[float]] = {"direct": [], "proxy": []}
    made = 0
    episode(direct, turns, True), episode(proxied, turns, False)  # warm both paths
    for _ in range(episodes):
        for side, base in (("direct", direct), ("proxy", proxied)):
            start = time.perf_counter()
            made = episode(base, turns, base == direct)
            walls[side].append(time.perf_counter() - start)
    return walls["direct"], walls["proxy"], made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per mode, each side")
    parser.add_argument("--episodes", type=int, default=10, help="episodes each side, per model")
    parser.add_argument("--turns", type=int, default=8, help="model calls per episode")
    parser.add_argument("--model-ms", type=float, default=100.0, help="the paced model's time per call (ms)")
    parser.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.turns, args.model_ms)
        return

    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 130))
    console.print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    rows: list[tuple[str, str, str, str, str, bool | None]] = []
    with model_and_proxy(args.turns, 0) as (direct, proxied):
        for stream in (False, True):
            t = {k: sorted(v) for k, v in per_call(direct, proxied, args.calls, stream).items()}
            added = percentile(t["added"], 50)
            rows.append(
                (
                    f"added per {'streamed' if stream else 'whole'} call, instant model (p50; p95)",
                    f"{percentile(t['direct'], 50):.3f} ms; {percentile(t['direct'], 95):.3f}",
                    f"{percentile(t['proxy'], 50):.3f} ms; {percentile(t['proxy'], 95):.3f}",
                    f"{added:.3f} ms; {percentile(t['added'], 95):.3f}",
                    f"<= {TARGET_MS:g} ms",
                    added <= TARGET_MS,
                )
            )
        instant = rollouts(direct, proxied, args.episodes, args.turns)
    with model_and_proxy(args.turns, args.model_ms) as (direct, proxied):
        paced = rollouts(direct, proxied, args.episodes, args.turns)
    for label, (d, p, made), target in (
        (f"rollout wall time, model {args.model_ms:g} ms per call", paced, TARGET_OVERHEAD),
        ("rollout wall time, instant model (worst case)", instant, None),
    ):
        overhead = sum(p) / sum(d) - 1
        added = (sum(p) - sum(d)) / len(d) / made * 1000
        rows.append(
            (
                f"{label}: {len(d)} episodes of {made} calls each side",
                f"{statistics.median(d) * 1000:.1f} ms/episode",
                f"{statistics.median(p) * 1000:.1f} ms/episode",
                f"{overhead:+.2%} ({added:.2f} ms/call)",
                f"<= {target:.0%}" if target is not None else "-",
                overhead <= target if target is not None else None,
            )
        )
    table = Table(title="The capture proxy's cost, measured in this run (direct = the same call without the proxy)")
    for column in ("measure", "direct", "through the proxy", "added", "target", "verdict"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    for *cells, met in rows:
        table.add_row(*cells, "-" if met is None else ("meets" if met else "misses"))
    console.print(table)
    console.print(
        f"Rollout overhead is total proxied wall time over total direct wall time, episodes interleaved; the paced "
        f"model answers each call {args.model_ms:g} ms after it arrives (the scripted endpoint's stall), as a real "
        f"model's generation would take. Load average {os.getloadavg()[0]:.1f} at the end."
    )


if __name__ == "__main__":
    main()
