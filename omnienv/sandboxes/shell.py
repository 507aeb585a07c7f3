"""A persistent bash inside a :class:`~omnienv.sandboxes.sandbox.Sandbox`: one shell per session.

An agent working in a terminal expects ``cd``, ``export`` and ``server &`` to outlive the command
that ran them, so every command runs in the same bash, fed through its stdin. The shell is
interactive (without line editing, prompts or history expansion) for one reason: Ctrl-C then
aborts the whole command line, as at a terminal, instead of going on with its next command.

- each command is sent as one ANSI-C quoted word (``$'...'``, every byte but printable ASCII
  escaped, so the line is one line whatever the command holds) and ``eval``-ed in the shell
  itself (so it keeps its effects, and no process starts but the command's own), with stdin from
  ``/dev/null`` (a command never reads the script that feeds the shell) and stderr merged into
  stdout; a line carrying a per-shell random marker, the command's number and its exit status
  follows;
- a reader thread drains the shell's output all the time (a background job that prints never
  blocks), keeping a bounded head and tail of each command's output;
- a command that outlives its timeout gets SIGINT, as Ctrl-C would give it: the shell and every
  process under it that is no background job's get it (bash starts those ignoring SIGINT and
  SIGQUIT; a server that catches SIGINT itself still ignores SIGQUIT), and the shell reads its
  next line. Ctrl-C comes again every half second while the command
  still runs; once nothing but the shell is left, the marker line is sent again instead (a Ctrl-C
  that reaches bash while it reads a line throws away what it had read of it: the marker line is
  written so that any rest of it is a harmless line of its own), and a marker of an earlier
  command is skipped. One that survives that too, or a command that ends the shell (``exit``), costs the
  shell: a fresh one starts in the working directory, and the result says so.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from omnienv.sandboxes.procfs import process_tree
from omnienv.sandboxes.sandbox import Sandbox

__all__ = ["CommandResult", "SandboxShell", "ansi_c_quoted"]

_GRACE_S = 10.0  # for an interrupted command to give the prompt back (a busy machine is slow to)
_START_S = 15.0
_REINTERRUPT_S = 0.5


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What one command did. ``exit_code`` is None when it was interrupted or the shell died."""

    output: str
    exit_code: int | None
    timed_out: bool = False
    omitted_bytes: int = 0
    restarted: bool = False
    """The shell was replaced (it exited, or would not stop): cwd, variables and jobs are reset."""


class _Capture:
    """A bounded window on a stream: its first ``head`` bytes and its last ``tail`` bytes."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.omitted = 0

    def add(self, data: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            del self.tail[:excess]
            self.omitted += excess

    def text(self) -> str:
        note = f"\n[... {self.omitted} bytes of output omitted ...]\n".encode() if self.omitted else b""
        return (bytes(self.head) + note + bytes(self.tail)).decode("utf-8", "replace").removesuffix("\n")


class SandboxShell:
    """One bash in ``sandbox``, started in ``workdir`` with exactly ``env``; see the module docs."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        workdir: str,
        env: Mapping[str, str],
        binds: Sequence[tuple[str, str]] = (),
        links: Sequence[tuple[str, str]] = (),
        output_bytes: int = 20_000,
    ) -> None:
        self.sandbox = sandbox
        self.workdir = workdir
        self.env = dict(env)
        self.binds = tuple(binds)
        self.links = tuple(links)
        self.output_bytes = output_bytes
        self._marker = f"__omnienv_done_{secrets.token_hex(12)}__"
        # Bounded numbers: the marker is in the shell's history, and a forged one with 5,000 digits made
        # int() raise in the reader, which then read nothing more of this shell.
        self._done = re.compile(rb"\n" + self._marker.encode() + rb" (\d{1,18}) (\d{1,3})\n")
        self._keep = len(self._marker) + 32  # bytes held back: a marker line may start in them
        self._number = 0  # of the command running: its marker line carries it
        self._cond = threading.Condition()
        self._process: subprocess.Popen[bytes] | None = None
        self._capture = self._new_capture()
        self._pending = b""
        self._finished: list[tuple[_Capture, int, int]] = []  # (output, command number, status)
        self._eof = True
        self._shell: int | None = None

    def _new_capture(self) -> _Capture:
        return _Capture(self.output_bytes // 2, self.output_bytes - self.output_bytes // 2)

    def start(self) -> None:
        """Start the shell (again); waits until it answers, so the first command finds it ready."""
        self._stop()
        process = self.sandbox.spawn(
            ["bash", "--noprofile", "--norc", "--noediting", "-i"],
            env={**self.env, "PS1": "", "PS2": "", "HISTFILE": "/dev/null"},
            binds=self.binds,
            links=self.links,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        with self._cond:
            self._process, self._eof = process, False
            self._capture, self._pending, self._finished = self._new_capture(), b"", []
            self._number = 0
        threading.Thread(target=self._drain, args=(process,), daemon=True, name="sandbox-shell").start()
        self._send(f"set +H; cd {shlex.quote(self.workdir)}\n{self._marker_line()}")
        if self._wait_done(time.monotonic() + _START_S) is None:
            self._stop()
            raise RuntimeError(f"the sandbox shell did not start within {_START_S:g} s")
        self._shell = self._shell_pid(process)

    def run(self, command: str, timeout: float, output_bytes: int | None = None) -> CommandResult:
        """Run ``command`` in the shell for at most ``timeout`` seconds, keeping ``output_bytes`` of its
        output (the shell's own bound by default)."""
        if self._process is None or self._eof:
            self.start()
        if output_bytes is not None:
            with self._cond:  # the capture that takes this command's output (and what jobs print before it)
                half = output_bytes // 2
                self._capture.head_limit = max(self._capture.head_limit, half)
                self._capture.tail_limit = max(self._capture.tail_limit, output_bytes - half)
        self._number += 1
        self._send(f"eval {ansi_c_quoted(command)} </dev/null 2>&1\n{self._marker_line()}")
        done = self._wait_done(time.monotonic() + timeout)
        timed_out = done is None and not self._eof
        if timed_out:
            done = self._interrupt_until_done(time.monotonic() + _GRACE_S)
        if done is not None:
            capture, code = done
            return CommandResult(capture.text(), None if timed_out else code, timed_out, capture.omitted)
        with self._cond:  # the shell ended, or would not stop: what it printed, then a fresh shell
            capture, self._capture = self._capture, self._new_capture()
            capture.add(self._pending)
        exit_code = None if timed_out else self._exit_status()
        self.start()
        return CommandResult(capture.text(), exit_code, timed_out, capture.omitted, restarted=True)

    def close(self) -> None:
        self._stop()

    # -- the pipe ------------------------------------------------------------------------------

    def _marker_line(self) -> str:
        """The line that prints the marker, the running command's number and its exit status.

        It holds no quote and no backslash: a Ctrl-C that reaches bash while it reads the line
        throws away what was read, and bash runs the rest as a line of its own. Any rest of this one
        is a complete line (at worst a "command not found"), never an open quote or a continuation
        that would swallow the marker line sent again."""
        return f"__omnienv_status=$?;echo;echo {self._marker} {self._number} $__omnienv_status\n"

    def _send(self, line: str) -> None:
        process = self._process
        if process is None or process.stdin is None:
            return
        try:
            process.stdin.write(line.encode())
            process.stdin.flush()
        except (BrokenPipeError, ValueError):
            with self._cond:
                self._eof = True
                self._cond.notify_all()

    def _drain(self, process: subprocess.Popen[bytes]) -> None:
        stream = process.stdout
        assert stream is not None
        fd = stream.fileno()
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            with self._cond:
                if process is not self._process:
                    return
                if not data:
                    self._eof = True
                    self._cond.notify_all()
                    return
                self._feed(data)

    def _feed(self, data: bytes) -> None:
        """Split the stream at marker lines: each ends one command's output."""
        pending = self._pending + data
        while found := self._done.search(pending):
            self._capture.add(pending[: found.start()])
            self._finished.append((self._capture, int(found.group(1)), int(found.group(2))))
            self._capture = self._new_capture()
            pending = pending[found.end() :]
            self._cond.notify_all()
        if len(pending) > self._keep:
            self._capture.add(pending[: -self._keep])
            pending = pending[-self._keep :]
        self._pending = pending

    def _wait_done(self, deadline: float) -> tuple[_Capture, int] | None:
        """The running command's output and status; None at the deadline or when the shell ends.
        A marker of an earlier command (sent again after a Ctrl-C, and printed twice) is skipped."""
        with self._cond:
            while True:
                while self._finished:
                    capture, number, status = self._finished.pop(0)
                    if number == self._number:
                        return capture, status
                remaining = deadline - time.monotonic()
                if self._eof or remaining <= 0:
                    return None
                self._cond.wait(remaining)

    # -- stopping ------------------------------------------------------------------------------

    @staticmethod
    def _shell_pid(process: subprocess.Popen[bytes]) -> int | None:
        """The host pid of the bash itself, whose descendants are the commands it runs."""
        for pid in reversed(process_tree(process.pid)):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "bash":
                    return pid
        return None

    def _interrupt_until_done(self, deadline: float) -> tuple[_Capture, int] | None:
        """Ctrl-C, again every half second while the command runs: a process it forked just after
        a round (``sleep`` after ``echo``, on a busy machine) gets the next one, instead of keeping
        the shell waiting for it until the deadline costs the shell. Once only the shell is left,
        the marker line goes again instead: a Ctrl-C that reached bash while it read that line
        threw it away, and bash would wait for input until the deadline."""
        first = True
        while True:
            if first or self._running():
                self._interrupt()
            else:
                self._send(self._marker_line())
            first = False
            done = self._wait_done(min(deadline, time.monotonic() + _REINTERRUPT_S))
            if done is not None or self._eof or time.monotonic() >= deadline:
                return done

    def _interruptible(self) -> list[int]:
        """The shell and the processes under it that are no background job's.

        Without job control bash starts a background job with SIGINT and SIGQUIT ignored, and its
        children inherit that. A server that installs a SIGINT handler of its own (uvicorn, a test
        harness) no longer ignores SIGINT but still ignores SIGQUIT, and is spared too. The shell
        itself ignores SIGQUIT (it is interactive) and is always interrupted."""
        if self._shell is None:
            return []
        return [pid for pid in process_tree(self._shell) if pid == self._shell or not _in_background(pid)]

    def _running(self) -> bool:
        """Whether a process of the command, besides the shell itself, still runs."""
        return any(pid != self._shell for pid in self._interruptible())

    def _interrupt(self) -> None:
        """Ctrl-C for the running command: SIGINT to :meth:`_interruptible`, which spares the
        background jobs."""
        for pid in self._interruptible():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGINT)

    def _exit_status(self) -> int | None:
        process = self._process
        if process is None:
            return None
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=_GRACE_S)
        return process.returncode

    def _stop(self) -> None:
        with self._cond:
            process, self._process = self._process, None
            self._eof = True
            self._cond.notify_all()
        self._shell = None
        if process is None:
            return
        if process.poll() is None:
            self.sandbox.kill()  # the shell and everything it started, background jobs included
        for stream in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)


_ESCAPED = [chr(b) if 0x20 <= b < 0x7F and chr(b) not in "'\\" else f"\\x{b:02x}" for b in range(256)]
_ESCAPED[0] = ""  # bash cannot hold a NUL byte in a string: it drops them, as from a $(...)


def ansi_c_quoted(command: str) -> str:
    """``command`` as one bash word on one line: ``$'...'``, every byte but printable ASCII (and
    the quote and backslash) written as ``\\xHH``.

    Bash decodes it itself; piping the command through ``base64 -d`` instead would start a process,
    about 3 ms, on every command."""
    return "$'" + "".join([_ESCAPED[b] for b in command.encode()]) + "'"


def _in_background(pid: int) -> bool:
    """Whether ``pid`` ignores SIGINT or SIGQUIT, as bash starts background jobs (or is gone)."""
    background = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGQUIT - 1))
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & background)
    return True
