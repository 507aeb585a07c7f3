"""A command-line server started for a test, its output in a log file, and stopped whatever happens."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CLI = [sys.executable, "-m", "omnienv.cli.main"]


@contextmanager
def started(args: list[str], log: Path) -> Iterator[subprocess.Popen[str]]:
    """``omnienv ARGS`` running in ``log``'s folder, writing to ``log``; terminated (killed if it
    will not stop) and reaped on the way out."""
    with log.open("w") as sink:
        server = subprocess.Popen([*CLI, *args], stdout=sink, stderr=subprocess.STDOUT, text=True, cwd=log.parent)
    try:
        yield server
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
