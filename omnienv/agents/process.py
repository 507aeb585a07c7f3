"""One harness process: started in a process group of its own, watched, and always reaped.

A harness is someone else's program with children of its own (a shell tool, a language server, a
retrying HTTP client), so it runs in a new session (its own process group): when its episode is
done, whatever it left behind is killed with it, whether it exited, ran out of time, or the run was
interrupted. A child that left the group (``setsid``, a daemon's double fork) is found by the
variable every harness process starts with, ``OMNIENV_HARNESS_RUN``, a secret of the episode's,
and killed too. Where the machine gives cgroups (:mod:`omnienv.sandboxes.cgroups`: a server run
as root, or a delegated subtree), the harness also starts in a cgroup of its own, which every
process it forks inherits whatever it does to its group or its environment, and the cgroup is
emptied and removed at the end. What the harness
prints (stdout and stderr together) goes to ``harness.log`` up to ``LOG_LIMIT`` bytes, then only
its last ``LOG_TAIL`` bytes, so a harness that floods its output fills no disk.
It ends in one of three ways, each the agent's own outcome:

- ``exited``: it stopped by itself (submitted, gave up, crashed: its exit code says which);
- ``timeout``: it ran past the episode's limit and was stopped;
- ``episode_over``: the environment ended the episode (or the agent submitted) and the harness
  did not exit within a grace period; nothing it does after that can change the episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from omnienv.agents.harness import Launch
from omnienv.core.threads import to_blocking_thread
from omnienv.sandboxes.cgroups import Cgroup, probe

__all__ = ["Finished", "run_process"]

GRACE_S = 10.0
"""How long a harness may go on after its episode is over before it is stopped."""
TERM_S = 3.0
"""How long a stopped harness has between SIGTERM and SIGKILL."""
LOG_TAIL = 4000
LOG_LIMIT = 8 * 1024 * 1024
"""How much of a harness's output ``harness.log`` keeps from the start (then its last ``LOG_TAIL`` bytes)."""
MARK = "OMNIENV_HARNESS_RUN"
"""The variable each harness process starts with (a secret per episode): what it left is found by it."""
_SWEEPS = 20


@dataclass(frozen=True, slots=True)
class Finished:
    """How a harness process ended."""

    stopped: str
    """``exited``, ``timeout``, ``episode_over``, or ``not_started``."""
    exit_code: int | None
    seconds: float
    log: Path
    error: str | None = None
    """Why it did not start (``not_started`` only)."""
    tail: bytes = b""
    """The last ``LOG_TAIL`` bytes the harness printed, kept as they came: never read back from
    ``log``, which the harness can replace (a FIFO there blocked the read, and the run with it)."""

    def log_tail(self) -> str:
        """The end of what the harness printed (stdout and stderr together)."""
        return self.tail.decode("utf-8", "replace")


async def run_process(
    launch: Launch,
    cwd: Path,
    timeout_s: float,
    over: asyncio.Event,
    grace_s: float = GRACE_S,
    stopping: Callable[[], None] | None = None,
) -> Finished:
    """Run the harness until it exits, its time is up, or ``grace_s`` after ``over`` is set.

    ``stopping`` is called as soon as that is decided, before the harness is stopped and reaped
    (which may take ``TERM_S``): from then on nothing it asks may count."""
    log = cwd / "harness.log"
    mark = secrets.token_urlsafe(18)
    started = time.perf_counter()
    # Its output pipe is ours, not asyncio's: asyncio's wait() also waits for its pipes to close,
    # which a daemon that keeps the pipe open would put off until it dies.
    read_end, write_end = os.pipe()
    with log.open("wb") as output, open(read_end, "rb", buffering=0) as pipe:
        try:
            process = await asyncio.create_subprocess_exec(
                *launch.argv,
                cwd=cwd,
                env={**launch.env, MARK: mark},
                stdin=asyncio.subprocess.PIPE if launch.stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=write_end,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return Finished("not_started", None, time.perf_counter() - started, log, f"{type(exc).__name__}: {exc}")
        finally:
            os.close(write_end)
        # Joined as it starts, long before the harness could fork: it acts only on its model's answers.
        cgroup = await to_blocking_thread(_join_cgroup, process.pid)
        feeding = asyncio.create_task(_feed(process, launch.stdin))
        last = bytearray()
        logging = asyncio.create_task(_log(pipe, output, last))
        try:
            stopped = await _watch(process, timeout_s, over, grace_s)
        finally:
            if stopping is not None:
                stopping()
            await _reap(process)
            await to_blocking_thread(_sweep, f"{MARK}={mark}".encode())
            if cgroup is not None:  # what left the group and cleared its environment too
                await to_blocking_thread(cgroup.remove)
            await asyncio.wait({logging}, timeout=TERM_S)  # every writer is dead: the pipe ends at once
            for task in (feeding, logging):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    return Finished(stopped, process.returncode, time.perf_counter() - started, log, tail=bytes(last))


async def _log(pipe: BinaryIO, output: BinaryIO, last: bytearray) -> None:
    """Copy the harness's output to its log: the first ``LOG_LIMIT`` bytes, then the last
    ``LOG_TAIL``; ``last`` keeps the last ``LOG_TAIL`` bytes of all of it."""
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), pipe
    )
    kept, tail, left_out = 0, b"", 0
    try:
        while chunk := await reader.read(1 << 16):
            last += chunk
            del last[:-LOG_TAIL]
            head = chunk[: max(0, LOG_LIMIT - kept)]
            output.write(head)
            kept += len(head)
            if len(head) < len(chunk):
                joined = tail + chunk[len(head) :]
                left_out += max(0, len(joined) - LOG_TAIL)
                tail = joined[-LOG_TAIL:]
    finally:
        transport.close()
        if left_out:
            output.write(f"\n[... {left_out:,} bytes of output left out ...]\n".encode())
        output.write(tail)


async def _feed(process: asyncio.subprocess.Process, data: bytes | None) -> None:
    """Write the instruction to the harness's stdin and close it (a harness that does not read it
    is no error)."""
    if data is None or process.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(data)
        await process.stdin.drain()
    process.stdin.close()


async def _watch(process: asyncio.subprocess.Process, timeout_s: float, over: asyncio.Event, grace_s: float) -> str:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    exited = asyncio.create_task(process.wait())
    ended = asyncio.create_task(over.wait())
    try:
        await asyncio.wait({exited, ended}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        if not exited.done() and ended.done():
            await asyncio.wait({exited}, timeout=max(0.0, min(grace_s, deadline - loop.time())))
            if not exited.done():
                return "episode_over" if loop.time() < deadline else "timeout"
        return "exited" if exited.done() else "timeout"
    finally:
        ended.cancel()
        exited.cancel()


def _signal_group(process: asyncio.subprocess.Process, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


async def _reap(process: asyncio.subprocess.Process) -> None:
    """Stop the harness's whole process group (politely first if it still runs) and reap it."""
    if process.returncode is None:
        _signal_group(process, signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(process.wait()), TERM_S)
        except TimeoutError:
            pass
    _signal_group(process, signal.SIGKILL)  # its children too, even when it exited by itself
    await process.wait()


def _environ(pid: str) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return environ.read().split(b"\0")
    except OSError:  # gone, or not ours
        return []


def _join_cgroup(pid: int) -> Cgroup | None:
    """A cgroup of the harness's own, with ``pid`` in it; None where the machine gives none."""
    support = probe()
    if not support.parents:
        return None
    cgroup = Cgroup(support, f"harness-{secrets.token_hex(8)}")
    try:
        cgroup.add(pid)
    except OSError:  # it exited already; the process group and the sweep cover the rest
        cgroup.remove()
        return None
    return cgroup


def _sweep(mark: bytes) -> None:
    """Kill every process whose environment holds ``mark``: what a harness left outside its process
    group. Each is checked again through a pidfd before the signal, so a reused pid is never hit."""
    for _ in range(_SWEEPS):
        found = [pid for pid in os.listdir("/proc") if pid.isdigit() and mark in _environ(pid)]
        if not found:
            return
        for pid in found:
            with contextlib.suppress(OSError):
                handle = os.pidfd_open(int(pid))
                try:
                    if mark in _environ(pid):
                        signal.pidfd_send_signal(handle, signal.SIGKILL)
                finally:
                    os.close(handle)
