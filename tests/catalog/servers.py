"""Real servers in subprocesses on 127.0.0.1, for the importers' tests: started, polled until
healthy (with a deadline, never a fixed sleep), and reaped with their whole process group,
whatever the test did."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.net import free_port, healthy
from tests.peerenv import ROOT

START_DEADLINE_S = 90.0


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """SIGKILL the server's process group now, and reap it."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


@contextmanager
def served(command: Sequence[str], port: int, cwd: Path = ROOT) -> Iterator[Served]:
    """Run ``command`` (which serves on ``port``) until the block ends; yields once ``/health`` answers."""
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="omnienv-served-") as tmp:
        log = Path(tmp) / "server.log"
        with open(log, "ab") as out:
            process = subprocess.Popen(
                list(command), cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        server = Served(url, process, log)
        try:
            deadline = time.monotonic() + START_DEADLINE_S
            while not healthy(url):
                if process.poll() is not None:
                    raise RuntimeError(f"{command[0]} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"not healthy within {START_DEADLINE_S} s:\n{log.read_text()[-3000:]}")
                time.sleep(0.05)
            yield server
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)


def omnienv_server(env: str = "wordle") -> tuple[list[str], int]:
    """``omnienv serve ENV`` on a free port: the command and the port."""
    port = free_port()
    command = [sys.executable, "-m", "omnienv.cli.main", "serve", env, "--port", str(port), "--no-ui"]
    return command, port
