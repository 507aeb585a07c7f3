"""Run a command as a child subreaper, and report, kill and reap what it left running.

``python -m tests.agents.subreaper REPORT SECONDS -- ARGV...`` runs ARGV (killed, with its process
group, after SECONDS). This process is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a process
of ARGV's tree whose parent dies is re-parented here, not to init, so once ARGV has exited, every
process still alive below this one is something the run left behind (an X server, a sandbox, a
harness's daemon), whatever group, session or environment it moved to. Their command lines go to
REPORT (JSON: ``{"returncode", "left"}``), then they are killed and reaped, so a run that leaves
something fails its test and still leaves nothing on the machine. Exits with ARGV's status.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
REAP_S = 10.0


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a live process, or None for one gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None if fields[0] in ("Z", "X") else (int(fields[1]), fields[0])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def descendants(root: int) -> list[int]:
    """The live processes below ``root`` (its children, theirs, ...)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = found[0]
    below: list[int] = []
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        below += children
        frontier += children
    return below


def _reap_all(deadline: float) -> None:
    """Kill every live process below this one and reap the children, until none is left."""
    while time.monotonic() < deadline:
        for pid in descendants(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return
        time.sleep(0.01)


def main(argv: list[str]) -> int:
    report, seconds, rest = Path(argv[0]), float(argv[1]), argv[2:]
    command = rest[1:] if rest[:1] == ["--"] else rest
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    process = subprocess.Popen(command, start_new_session=True)
    try:
        returncode = process.wait(seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        returncode = process.wait()
    left = [{"pid": pid, "cmdline": _cmdline(pid)} for pid in descendants(os.getpid())]
    report.write_text(json.dumps({"returncode": returncode, "left": left}))
    _reap_all(time.monotonic() + REAP_S)
    return returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
