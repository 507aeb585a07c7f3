"""One ``ipykernel`` in its own :class:`~omnienv.sandboxes.sandbox.Sandbox`; started and killed synchronously.

The kernel starts through :meth:`Sandbox.spawn` (minimal environment, per-sandbox cgroup, capped
``/tmp``, ``/dev/shm`` and work dir, pid namespace), with the Python view of
:mod:`omnienv.sandboxes.jupyter.packages` and the in-kernel boot code. The sandbox has no network,
so the kernel talks over ZMQ ``ipc`` sockets in the sandbox's run dir, mounted at :data:`RUN`
inside. It never outlives its owner: bwrap dies with the thread that started it, and the kernel
exits when its lifeline pipe from the owner closes (however the owner dies).

What the kernel starts with (bwrap, the namespace's init, the kernel) is its **baseline**; every
other process in the sandbox is the agent's and :meth:`SandboxedKernel.kill_strays` ends it.
:meth:`SandboxedKernel.death` is the one rule that says whose fault a dead kernel is.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import threading
import time
from typing import Any

from omnienv.core import AgentCausedEnd, OmniEnvError
from omnienv.sandboxes.bubblewrap import HOME, Limits
from omnienv.sandboxes.cells import OutputLimits
from omnienv.sandboxes.jupyter.errors import KernelDiedError, SandboxStartError
from omnienv.sandboxes.jupyter.packages import KERNEL_PACKAGES, SITE, KernelView, kernel_view
from omnienv.sandboxes.polling import wait
from omnienv.sandboxes.procfs import process_state, process_tree
from omnienv.sandboxes.sandbox import Sandbox

__all__ = ["KERNEL_ENV", "PREFIX", "RUN", "SandboxedKernel", "kernel_limits"]

START_TIMEOUT = 30.0
PREFIX = "omnienv-jupyter-"
RUN = "/run/kernel"
"""The sandbox's run dir (sockets, connection file) as the kernel sees it."""
_LOG_BYTES = 16_384

KERNEL_ENV = {
    "HOME": HOME,
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "PYTHONPATH": SITE,  # for the agent's own `python` subprocesses; the kernel itself runs isolated (-I)
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "MPLCONFIGDIR": "/tmp/.matplotlib",
    "IPYTHONDIR": "/tmp/.ipython",
    "JUPYTER_RUNTIME_DIR": "/tmp/.jupyter",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MALLOC_ARENA_MAX": "2",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
}
"""The kernel's whole environment, less ``PATH`` (the interpreter's directory comes first)."""


def kernel_limits(limits: OutputLimits) -> dict[str, int]:
    """The in-kernel bounds (:mod:`.inkernel.output`) that match the host's ``limits``."""
    return {
        "stream_head": max(100, limits.stream_chars - 200),  # the head, the omission note and the
        "stream_tail": 800,  # tail all fit in what the host keeps, so the note's count is exact
        "text_chars": 65_536,
        "message_chars": 262_144,
        "image_chars": (limits.image_bytes + 2) // 3 * 4,
        "items": 200,
    }


class SandboxedKernel:
    """An ``ipykernel`` in a sandbox of its own; see the module docs."""

    def __init__(
        self,
        limits: Limits | None = None,
        preload: tuple[str, ...] = (),
        base_dir: str | None = None,
        output_limits: OutputLimits | None = None,
        packages: tuple[str, ...] = KERNEL_PACKAGES,
    ) -> None:
        self.limits = limits or Limits()
        self.preload = preload
        self.packages = packages
        self.output_limits = output_limits or OutputLimits()
        self.sandbox = Sandbox(self.limits, base_dir=base_dir, prefix=PREFIX)
        self.root, self.run_dir, self.host_work_dir = self.sandbox.root, self.sandbox.run_dir, self.sandbox.work_dir
        self.connection: dict[str, Any] = {
            "transport": "ipc", "ip": str(self.run_dir / "k"),
            "shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5,
            "key": secrets.token_hex(16), "signature_scheme": "hmac-sha256", "kernel_name": "",
        }  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None
        self.baseline: set[int] = set()
        self.host_killed = False  # the host stopped it: its death is an infrastructure failure
        self._memory_mark = 0
        self._log = bytearray()
        self._log_fd: int | None = None
        self._lifeline: int | None = None
        """The write end of this kernel's own lifeline. Not one pipe for every kernel: the agent's code
        can reopen its read end for writing through ``/proc/self/fd`` and write to it, which would
        end every kernel of the process (and each one started after, while the bytes last)."""
        self._killed = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        pid = self.process.pid if self.process else None
        return f"SandboxedKernel(pid={pid}, root={str(self.root)!r}, alive={self.alive()})"

    # -- starting -------------------------------------------------------------------------------

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Launch the sandbox and return once the kernel has bound its sockets and set itself up."""
        view = kernel_view(self.packages)
        inside = {**self.connection, "ip": f"{RUN}/k"}
        (self.run_dir / "kernel.json").write_text(json.dumps(inside))
        (self.root / "passwd").write_text(f"user:x:1000:1000::{HOME}:/bin/sh\n")
        (self.root / "group").write_text("user:x:1000:\n")
        (self.root / "empty").mkdir()
        ready_read, ready_write = os.pipe()
        log_read, log_write = os.pipe()
        self._log_fd = log_read
        lifeline, self._lifeline = os.pipe()  # both close-on-exec; the kernel inherits the read end
        config = {
            "lifeline": lifeline, "ready": ready_write, "connection_file": f"{RUN}/kernel.json", "site": SITE,
            "limits": kernel_limits(self.output_limits), "preload": list(self.preload),
        }  # fmt: skip
        try:
            self._launch(view, config, ready_read, ready_write, log_write, timeout)
        finally:
            os.close(ready_read)
            os.close(lifeline)
        self.baseline = self.pids()
        self._memory_mark = self.sandbox.memory_limit_hits()

    def _launch(
        self,
        view: KernelView,
        config: dict[str, Any],
        ready_read: int,
        ready_write: int,
        log_write: int,
        timeout: float,
    ) -> None:
        try:
            self.process = self.sandbox.spawn(
                view.boot_argv(json.dumps(config)),
                env={**KERNEL_ENV, "PATH": f"{view.bin_dir}:/usr/local/bin:/usr/bin:/bin"},
                read_only=view.read_only,
                files=self._files(view),
                binds=[(str(self.run_dir), RUN)],
                stdout=log_write,
                stderr=log_write,
                pass_fds=(config["lifeline"], ready_write),
            )
        finally:
            os.close(ready_write)
            os.close(log_write)
        self._wait_ready(ready_read, time.monotonic() + timeout, timeout)

    def _files(self, view: KernelView) -> list[tuple[str, str]]:
        empty = str(self.root / "empty")
        return [
            *view.files,
            *((empty, hidden) for hidden in view.hidden),
            (str(self.root / "passwd"), "/etc/passwd"),
            (str(self.root / "group"), "/etc/group"),
        ]

    def _wait_ready(self, ready: int, deadline: float, timeout: float) -> None:
        assert self._log_fd is not None
        watched = [ready, self._log_fd]
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxStartError(f"the kernel did not become ready within {timeout:g} s; log: {self.log_tail()}")
            readable, _ = wait(watched, (), min(remaining, 0.5))
            if self._log_fd in readable and self._read_log() is False:
                watched.remove(self._log_fd)
            if ready in readable:
                if os.read(ready, 1) == b"1":
                    return
                code = self.process.wait(timeout=5) if self.process else None
                raise SandboxStartError(f"the sandbox exited with status {code}; log: {self.log_tail()}")
            if self.process is not None and self.process.poll() is not None:
                raise SandboxStartError(
                    f"the sandbox exited with status {self.process.returncode}; log: {self.log_tail()}"
                )

    def _read_log(self) -> bool | None:
        """Read a chunk of the log pipe (keeping its last bytes): True, False at its end, None if empty."""
        if self._log_fd is None:
            return False
        try:
            chunk = os.read(self._log_fd, 65_536)
        except BlockingIOError:
            return None
        except OSError:
            return False
        self._log += chunk
        del self._log[:-_LOG_BYTES]
        return bool(chunk)

    def log_tail(self, chars: int = 600) -> str:
        if self._log_fd is not None:
            os.set_blocking(self._log_fd, False)
            while self._read_log():
                pass
        return self._log.decode(errors="replace")[-chars:].strip() or "(empty)"

    # -- processes ------------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and not self._killed

    def pids(self) -> set[int]:
        """Every process of the sandbox (bwrap's own included) that is not a zombie."""
        if self.sandbox.cgroup.dirs:  # joined before the kernel ran: it holds everything
            found = self.sandbox.cgroup.pids()
        else:
            found = set(process_tree(self.process.pid)) if self.process and self.process.poll() is None else set()
        return {pid for pid in found if pid in self.baseline or process_state(pid) not in (None, "Z")}

    def process_tree(self) -> list[int]:
        """The pids of the sandbox's processes, parents first (bwrap's own included)."""
        return process_tree(self.process.pid) if self.process is not None and self.process.poll() is None else []

    def process_count(self) -> int:
        return len(self.pids())

    def stray_processes(self) -> int:
        """How many processes the agent's code left in the sandbox, beyond the kernel's own."""
        return len(self.pids() - self.baseline)

    def kill_strays(self, timeout: float = 2.0) -> int:
        """Kill every process of the sandbox but the kernel's own; returns how many there were."""
        killed: set[int] = set()
        deadline = time.monotonic() + timeout
        while True:
            strays = self.pids() - self.baseline
            if not strays or time.monotonic() > deadline:
                return len(killed)
            for pid in strays:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            killed |= strays
            os.sched_yield()

    def mark_cell(self) -> None:
        """A cell starts: a memory-limit hit from now on is this cell's."""
        self._memory_mark = self.sandbox.memory_limit_hits()

    def memory_limit_hit(self) -> bool:
        """Whether the sandbox hit its memory limit since :meth:`mark_cell`."""
        return self.sandbox.memory_limit_hits() > self._memory_mark

    def death(self) -> OmniEnvError:
        """Why the kernel is gone, as the error to raise: the one rule of failure attribution."""
        process = self.process
        status = process.poll() if process is not None else None
        if self.host_killed or self._killed or process is None:
            return KernelDiedError(
                f"the kernel was stopped by the host (exit status {status}); "
                "this is not the agent's doing and the episode is void"
            )
        if self.memory_limit_hit():
            return AgentCausedEnd(
                f"The kernel was killed: the sandbox's processes together used all of its "
                f"{self.limits.total_memory_bytes >> 20} MiB of memory. The episode is over.",
                reason="memory_limit",
            )
        if status in (128 + signal.SIGXCPU, -signal.SIGXCPU):
            return AgentCausedEnd(
                f"The kernel used up its {self.limits.cpu_seconds} s of CPU time and was killed. The episode is over.",
                reason="time_limit",
            )
        return AgentCausedEnd(
            f"The kernel died (exit status {status}) because of the code it ran. The episode is over.",
            reason="kernel_died",
        )

    # -- stopping -------------------------------------------------------------------------------

    def stop(self) -> None:
        """Kill every process of the sandbox and reap them; the files stay. Idempotent."""
        self.host_killed = True
        self.sandbox.kill()

    def kill(self) -> None:
        """Stop the sandbox and delete its files, mounts and cgroup; idempotent."""
        with self._lock:
            if self._killed:
                return
            self._killed = True
        self.host_killed = True
        self.sandbox.close()
        for fd in (self._log_fd, self._lifeline):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._log_fd = self._lifeline = None
