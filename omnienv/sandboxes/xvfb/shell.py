"""The agent's shell: one bash inside the session's sandbox, spoken to over its stdin and stdout.

Nothing goes through host files. Each command goes in as one line on the shell's stdin; the
shell runs it with ``timeout``, its output sent to files in the sandbox's *own* private ``/tmp``,
and answers with one line on stdout: a per-shell nonce, the exit code and both outputs (capped)
in base64. The host reads at most :data:`REPLY_LIMIT` bytes per command with a deadline and
skips lines that do not carry the nonce, so whatever the agent writes there can at worst garble
its own command's answer. Background jobs (``xcalc &``) live on in the shell's pid namespace
until the session ends; the agent killing the shell only costs it a fresh one at the next call.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import shlex
import subprocess
import threading
import time
import uuid
from collections.abc import Callable

from omnienv.core.errors import ToolError
from omnienv.sandboxes.desktop import CommandResult
from omnienv.sandboxes.polling import wait

__all__ = ["OUTPUT_LIMIT", "SandboxShell"]

OUTPUT_LIMIT = 10_000
"""Characters of each output an observation shows."""
CAPTURE_BYTES = OUTPUT_LIMIT * 4
REPLY_LIMIT = 1024 * 1024
GRACE = 10.0
"""Seconds past a command's own timeout before the host gives up on the shell and kills it."""


def text(data: bytes | None) -> str:
    decoded = (data or b"").decode("utf-8", "replace")
    return decoded if len(decoded) <= OUTPUT_LIMIT else decoded[:OUTPUT_LIMIT] + "\n... (output truncated)"


class SandboxShell:
    """Runs commands one at a time in a long-lived sandboxed bash; blocking (call from a thread)."""

    def __init__(self, start: Callable[[], subprocess.Popen[bytes]]) -> None:
        self._start = start
        self._process: subprocess.Popen[bytes] | None = None
        self._nonce = ""
        self._count = 0
        self._lock = threading.Lock()

    def _session(self) -> subprocess.Popen[bytes]:
        process = self._process
        if process is None or process.poll() is not None:
            self._discard()
            process = self._process = self._start()
            assert process.stdin is not None and process.stdout is not None
            for stream in (process.stdin, process.stdout):
                flags = fcntl.fcntl(stream.fileno(), fcntl.F_GETFL)
                fcntl.fcntl(stream.fileno(), fcntl.F_SETFL, flags | os.O_NONBLOCK)
            self._nonce = uuid.uuid4().hex
        return process

    def run(self, command: str, timeout: float, cancelled: threading.Event | None = None) -> CommandResult:
        if "\0" in command:
            raise ToolError("the command contains a NUL character")
        with self._lock:
            process = self._session()
            self._count += 1
            out, err = f"/tmp/.omnienv-run-{self._count}.out", f"/tmp/.omnienv-run-{self._count}.err"
            line = (
                f"( cd ~ && exec timeout -k 1 {timeout:g} bash -c {shlex.quote(command)} ) </dev/null "
                f">{out} 2>{err}; printf '%s %s ' {self._nonce} \"$?\"; head -c {CAPTURE_BYTES} {out} | base64 -w0; "
                f"printf ' '; head -c {CAPTURE_BYTES} {err} | base64 -w0; echo; rm -f {out} {err}\n"
            )
            deadline = time.monotonic() + timeout + GRACE
            try:
                reply = self._exchange(process, line.encode(), deadline, cancelled)
            except TimeoutError:
                self._discard()
                return CommandResult(-9, "", "the shell stopped answering; it was restarted", True)
            if reply is None:  # the agent killed its own shell: the next call starts another
                self._discard()
                return CommandResult(-9, "", "the shell was killed before the command finished", True)
            return _parse(reply)

    def _exchange(
        self, process: subprocess.Popen[bytes], line: bytes, deadline: float, cancelled: threading.Event | None
    ) -> bytes | None:
        assert process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin.fileno(), process.stdout.fileno()
        pending, received = memoryview(line), b""
        prefix = self._nonce.encode() + b" "
        while True:
            if cancelled is not None and cancelled.is_set():
                raise TimeoutError
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            readable, writable = wait([stdout], [stdin] if pending else [], min(remaining, 0.1))
            if writable:
                try:
                    pending = pending[os.write(stdin, pending) :]
                except BlockingIOError:
                    pass
                except OSError:
                    return None
            if readable:
                try:
                    chunk = os.read(stdout, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    return None
                received += chunk
                while b"\n" in received:
                    first, received = received.split(b"\n", 1)
                    found = first.rfind(prefix)
                    if found >= 0:
                        return first[found + len(prefix) :]
                if len(received) > REPLY_LIMIT:  # junk the agent wrote: keep only what a reply could be
                    received = received[-REPLY_LIMIT // 4 :]

    def _discard(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.kill()  # bwrap's namespace dies with it, and every job it ran
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def close(self) -> None:
        with self._lock:
            self._discard()


def _parse(reply: bytes) -> CommandResult:
    fields = reply.split(b" ")
    try:
        code = int(fields[0])
    except (ValueError, IndexError):
        code = -1
    outputs = []
    for index in (1, 2):
        try:
            outputs.append(base64.b64decode(fields[index], validate=True)[:CAPTURE_BYTES])
        except (ValueError, IndexError):
            outputs.append(b"")
    timed_out = code in (124, 137)
    return CommandResult(-9 if timed_out else code, text(outputs[0]), text(outputs[1]), timed_out)
