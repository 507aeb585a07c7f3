"""The helper behind ``execute_shell_command``: ``_sandbox_shell(command, timeout)`` in the kernel.

The command runs under ``/bin/sh`` in a process group of its own, which is killed when the
command ends, times out or is interrupted, so ``yes`` or a stray daemon cannot wedge the kernel;
what it printed is read back from temporary files and bounded before it is shown. Anything that
left the process group is killed by the host at the end of the cell.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from typing import Any

NAME = "_sandbox_shell"


def run(command: str, timeout: float, limit: int = 20_000) -> None:
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    note = ""
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
    except OSError as exc:
        print(f"cannot start the shell: {exc}", file=sys.stderr)
        return
    try:
        proc.wait(timeout=timeout)
    except BaseException as exc:
        timed_out = isinstance(exc, subprocess.TimeoutExpired)
        note = f"[command stopped after {timeout:g} s]" if timed_out else "[command interrupted]"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
    for stream, target in ((out, sys.stdout), (err, sys.stderr)):
        size = stream.seek(0, 2)
        stream.seek(0)
        text = stream.read(limit).decode("utf-8", "replace")
        if size > limit:
            text += f"\n[... {size - limit} more bytes]\n"
        target.write(text)
        stream.close()
    if note:
        print(note, file=sys.stderr)
    elif proc.returncode:
        print(f"[exit code {proc.returncode}]", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()


def install(shell: Any) -> None:
    """Put the helper in the user namespace, hidden from ``%who`` and ``dir()`` listings of IPython."""
    shell.push({NAME: run}, interactive=False)
