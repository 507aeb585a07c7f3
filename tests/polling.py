"""Waiting in tests: poll a condition with a deadline, never sleep for readiness."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import httpx

__all__ = ["eventually", "wait_healthy"]


def eventually(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout:g} s")
        time.sleep(0.01)


def wait_healthy(url: str, process: subprocess.Popen[str], timeout: float = 60.0) -> None:
    """Wait until ``url``'s ``/health`` answers 200, failing at once with the output if
    ``process`` (the server) exits first."""

    def answers() -> bool:
        if process.poll() is not None:
            output = "".join(stream.read() for stream in (process.stdout, process.stderr) if stream is not None)
            raise AssertionError(f"the server exited with {process.returncode}: {output}")
        try:
            return httpx.get(f"{url}/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    eventually(answers, timeout, f"{url} healthy")
