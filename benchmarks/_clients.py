"""The closed-loop Wordle client of the WebSocket benchmarks, defined once.

``ws_throughput.py`` (and ``ray_overhead.py`` through it) and ``workers.py`` compare steps/s and
step latencies across servers and worker counts. Those numbers compare only if every script plays
the same frames in the same loop and counts a step by the same rule, so the loop lives here. What
does differ between them is passed in: how a request travels (a WebSocket frame, an HTTP request)
and what a script also records of each reply (``workers.py``: the worker that served it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from benchmarks._harness import ROOT

__all__ = ["Counts", "guess_words", "is_error", "play", "reset_frame", "step_frames", "ws_exchange"]

GUESSES_PER_EPISODE = 5
Request = TypeVar("Request")
Reply = TypeVar("Reply")


def guess_words() -> list[str]:
    """Valid guesses that are no answer in any split, so no episode ends early on either server."""
    words = ROOT / "omnienv" / "envs" / "wordle" / "words"
    answers = {w for split in ("train", "test") for w in (words / f"{split}.txt").read_text().split()}
    pool = [w for w in (words / "guesses.txt").read_text().split() if w not in answers]
    picked = pool[:: max(1, len(pool) // GUESSES_PER_EPISODE)][:GUESSES_PER_EPISODE]
    if len(picked) < GUESSES_PER_EPISODE:
        raise RuntimeError(f"only {len(picked)} valid non-answer words in {words}")
    return picked


def reset_frame(seed: int) -> str:
    return json.dumps({"type": "reset", "data": {"seed": seed}})


def step_frames(server: str = "omnienv") -> list[str]:
    """Five Wordle guesses; for ``omnienv-echo``, the same words sent to its ``echo`` tool."""
    tool, argument = ("echo", "message") if server == "omnienv-echo" else ("guess", "word")
    return [
        json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": tool, "arguments": {argument: w}}})
        for w in guess_words()
    ]


def is_error(reply: str | bytes) -> bool:
    """An error frame (the servers put ``"error"`` first)."""
    head = reply[:40] if isinstance(reply, str) else reply[:40].decode(errors="replace")
    return '"error"' in head


def ws_exchange(ws: Any) -> Callable[[str], Awaitable[str | bytes]]:
    """One request over an open WebSocket: send a frame, await the next one."""

    async def exchange(frame: str) -> str | bytes:
        await ws.send(frame)
        reply: str | bytes = await ws.recv()
        return reply

    return exchange


@dataclass
class Counts:
    """What the loops sharing it saw: steps sent and answered inside the window, their latencies in
    seconds, and error replies (resets included, in the window or not)."""

    steps: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)


async def play(
    exchange: Callable[[Request], Awaitable[Reply]],
    failed: Callable[[Reply], bool],
    reset: Callable[[int], Request],
    steps: Sequence[Request],
    index: int,
    window: tuple[float, float],
    counts: Counts,
) -> None:
    """Session ``index``, closed loop: ``reset`` then every step of ``steps``, again and again, until
    a reply comes after the window's end.

    Episode ``e`` resets with seed ``index * 100_003 + e``. A step counts when it was sent and
    answered inside ``window`` (``time.perf_counter`` values, the same clock in every process); its
    latency is from send to reply. ``failed`` sees every reply once its clock stopped: True for an
    error, and where a script records what else a reply says.
    """
    start, stop = window
    episode = 0
    while True:
        counts.errors += failed(await exchange(reset(index * 100_003 + episode)))
        if time.perf_counter() > stop:
            return
        episode += 1
        for step in steps:
            t0 = time.perf_counter()
            reply = await exchange(step)
            t1 = time.perf_counter()
            counts.errors += failed(reply)
            if t0 >= start and t1 <= stop:
                counts.steps += 1
                counts.latencies.append(t1 - t0)
            if t1 > stop:
                return
