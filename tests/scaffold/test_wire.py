"""A generated environment over the wire: `omnienv serve package.env:Class`, then `omnienv check URL`.

Both are real processes of the CLI; the server runs with the package on PYTHONPATH (not
installed), on a free loopback port, and is killed and reaped whatever the outcome.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from omnienv.scaffold import ARCHETYPES, CreatedEnvironment
from tests.net import free_port

STARTUP_S = 30


@contextlib.contextmanager
def served(created: CreatedEnvironment, log: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(created.root), os.environ.get("PYTHONPATH")]))}
    command = [
        sys.executable,
        "-m",
        "omnienv.cli.main",
        "serve",
        created.target,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + STARTUP_S
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
                assert process.poll() is None, f"server exited: {log.read_text()}"
                assert time.monotonic() < deadline, f"server not up in {STARTUP_S} s: {log.read_text()}"
                time.sleep(0.02)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.kill()
            process.wait(10)


@pytest.mark.parametrize("archetype", ARCHETYPES)
def test_omnienv_check_passes_over_the_wire(
    archetype: str, generated: Callable[[str, str], CreatedEnvironment], tmp_path: Path
) -> None:
    created = generated(f"wire-{archetype}", archetype)
    with served(created, tmp_path / "server.log") as url:
        result = subprocess.run(
            [sys.executable, "-m", "omnienv.cli.main", "check", url],
            capture_output=True,
            text=True,
            timeout=180,
            env={**os.environ, "COLUMNS": "200"},
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all checks passed" in result.stdout
