"""Jupyter kernels in bubblewrap sandboxes, started ahead of time in a warm pool.

Three pieces, bottom up:

- :class:`SandboxedKernel`: one ``ipykernel`` process inside its own bubblewrap sandbox (see
  :mod:`omnienv.sandboxes.bubblewrap`). The sandbox has no network, so the kernel talks over ZMQ
  ``ipc`` sockets in a host directory bound into the sandbox at the same path. The process is the
  leader of its own process group and never outlives its owner, even one that crashes: bwrap
  dies with the thread that started it, and the kernel also exits when its lifeline pipe from the
  owner closes (which covers an owner that dies while bwrap is still starting). The files of a
  crashed owner's kernels are swept by the next pool.
- :class:`KernelPool`: threads that keep ``size`` kernels started and ready, so an episode gets a
  fresh, isolated kernel in milliseconds. Every kernel is started from a pool thread that lives
  as long as the pool, because bwrap's ``--die-with-parent`` follows the *thread* that forked it.
- :class:`JupyterSandbox`: the async face one episode uses (:class:`~omnienv.sandboxes.cells.
  CodeSandbox`): run a cell with a time limit (interrupted past it, replaced if it will not stop),
  run a shell command, write task files, close.

A dead kernel is an infrastructure failure (:class:`KernelDiedError`); a cell that runs too long,
forks too much or allocates too much is the agent's problem and comes back as cell output.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import contextlib
import fcntl
import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections import deque
from pathlib import Path
from typing import Any

from omnienv.core import EnvironmentFailure
from omnienv.sandboxes.bubblewrap import HOME, Limits, bwrap_command, python_paths
from omnienv.sandboxes.cells import BoundedText, CellError, CellOutput, CodeSandbox, OutputLimits, strip_ansi

__all__ = [
    "JupyterSandbox",
    "KernelDiedError",
    "KernelPool",
    "SandboxStartError",
    "SandboxedKernel",
    "default_pool",
    "open_code_sandbox",
    "sweep_stale",
]

START_TIMEOUT = 30.0
INTERRUPT_GRACE = 3.0
POLL_INTERVAL = 0.25
MAX_STRAY_PROCESSES = 32
_PREFIX = "omnienv-jupyter-"

KERNEL_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": HOME,
    "LANG": "C.UTF-8",
    "TERM": "dumb",
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

# Runs once in every kernel before it joins the pool. The shell helper runs commands in their
# own process group and bounds what it reads back, so `yes` or a stray daemon cannot wedge it.
SETUP_CODE = r"""
def _omnienv_shell(command, timeout, limit=20000):
    import os, signal, subprocess, sys, tempfile
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    note = ""
    try:
        proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, start_new_session=True)
    except OSError as exc:
        print(f"cannot start the shell: {exc}", file=sys.stderr)
        return
    try:
        proc.wait(timeout=timeout)
    except BaseException as exc:
        note = (f"[command stopped after {timeout:g} s]" if isinstance(exc, subprocess.TimeoutExpired)
                else "[command interrupted]")
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
    if note:
        print(note, file=sys.stderr)
    elif proc.returncode:
        print(f"[exit code {proc.returncode}]", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()

get_ipython().user_ns_hidden["_omnienv_shell"] = _omnienv_shell
"""


# The kernel's entry point: a thread that ends the kernel when the owner's end of the lifeline
# pipe closes, which happens however the owner dies, even before bwrap's own death signal is
# armed; then ipykernel's usual launcher.
BOOT_CODE = """
import os, sys, threading
def _lifeline(fd=int(sys.argv[1])):
    try:
        os.read(fd, 1)
    except OSError:
        return
    os._exit(70)
threading.Thread(target=_lifeline, name="omnienv-lifeline", daemon=True).start()
sys.argv = ["ipykernel_launcher", "-f", sys.argv[2]]
if sys.path and sys.path[0] == "":
    del sys.path[0]
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""

_lifeline_fds: list[int] = []  # (read end, write end), made on first use, open for good
_lifeline_lock = threading.Lock()


def _lifeline() -> int:
    """The read end of this process's lifeline; the write end stays open until the process ends."""
    with _lifeline_lock:
        if not _lifeline_fds:
            _lifeline_fds.extend(os.pipe())  # both close-on-exec; each kernel inherits the read end
        return _lifeline_fds[0]


def sweep_stale(base_dir: str | None = None) -> int:
    """Delete the directories of kernels whose owner died (their lock is free); returns how many."""
    base = Path(base_dir or tempfile.gettempdir())
    removed = 0
    with contextlib.suppress(OSError):
        for root in base.iterdir():
            if not root.name.startswith(_PREFIX):
                continue
            try:
                fd = os.open(root / "owner.lock", os.O_RDWR | os.O_CLOEXEC)
            except OSError:
                continue  # still being created, or not ours
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its owner is alive
            finally:
                os.close(fd)
            shutil.rmtree(root, ignore_errors=True)
            removed += 1
    return removed


class KernelDiedError(EnvironmentFailure):
    """The kernel process is gone (crashed or killed); the episode cannot go on."""

    code = "KERNEL_DIED"


class SandboxStartError(EnvironmentFailure):
    """A sandboxed kernel did not start (bubblewrap refused, or the kernel never answered)."""

    code = "SANDBOX_START_FAILED"


# -- one sandboxed kernel ----------------------------------------------------------------------


class SandboxedKernel:
    """An ``ipykernel`` in a bubblewrap sandbox; started and killed synchronously."""

    def __init__(self, limits: Limits | None = None, preload: tuple[str, ...] = (),
                 base_dir: str | None = None) -> None:
        self.limits = limits or Limits()
        self.preload = preload
        self.root = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=base_dir))
        self.run_dir = self.root / "run"
        self.host_work_dir = self.root / "work"
        self.run_dir.mkdir()
        self.host_work_dir.mkdir()
        # Held while this process owns the kernel; a free lock marks the files of a dead owner.
        self._owner_lock = os.open(self.root / "owner.lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._owner_lock, fcntl.LOCK_EX)
        self.connection: dict[str, Any] = {
            "transport": "ipc", "ip": str(self.run_dir / "k"),
            "shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5,
            "key": secrets.token_hex(16), "signature_scheme": "hmac-sha256", "kernel_name": "",
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.baseline_processes = 0
        self._killed = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        pid = self.process.pid if self.process else None
        return f"SandboxedKernel(pid={pid}, root={str(self.root)!r}, alive={self.alive()})"

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Launch the sandbox and return once the kernel has answered and run its setup."""
        from jupyter_client import BlockingKernelClient

        connection_file = self.run_dir / "kernel.json"
        connection_file.write_text(json.dumps(self.connection))
        (self.run_dir / "passwd").write_text(f"user:x:1000:1000::{HOME}:/bin/sh\n")
        (self.run_dir / "group").write_text("user:x:1000:\n")
        lifeline = _lifeline()
        argv = [sys.executable, "-c", BOOT_CODE, str(lifeline), str(connection_file)]
        command = bwrap_command(
            argv, work_dir=str(self.host_work_dir), shared_dirs=[str(self.run_dir)],
            env=KERNEL_ENV, limits=self.limits, read_only=python_paths(),
            files=[(str(self.run_dir / "passwd"), "/etc/passwd"), (str(self.run_dir / "group"), "/etc/group")],
        )
        with open(self.run_dir / "kernel.log", "wb") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True, pass_fds=(lifeline,),
            )
        client = BlockingKernelClient()
        client.load_connection_info(self.connection)
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        try:
            deadline = time.monotonic() + timeout
            self._wait_ready(client, deadline)
            code = SETUP_CODE + "".join(f"import {name}\n" for name in self.preload)
            msg_id = client.execute(code, silent=True, store_history=False)
            reply = _blocking_reply(client, msg_id, deadline, self)
            if reply["content"].get("status") != "ok":
                raise SandboxStartError(f"kernel setup failed: {reply['content'].get('evalue')}")
        finally:
            client.stop_channels()
        self.baseline_processes = self.process_count()

    def _wait_ready(self, client: Any, deadline: float) -> None:
        while True:
            msg_id = client.kernel_info()
            try:
                _blocking_reply(client, msg_id, min(deadline, time.monotonic() + 0.5), self)
                return
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise SandboxStartError(
                        f"the kernel did not answer within {START_TIMEOUT:g} s; log: {self.log_tail()}"
                    ) from None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and not self._killed

    def log_tail(self, chars: int = 600) -> str:
        try:
            return (self.run_dir / "kernel.log").read_text(errors="replace")[-chars:].strip()
        except OSError:
            return "(no log)"

    def process_tree(self) -> list[int]:
        """The pids of the sandbox's processes, bwrap's own included, parents first."""
        if self.process is None:
            return []
        found, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            with contextlib.suppress(OSError):
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as f:
                        todo.extend(int(child) for child in f.read().split())
        return found

    def process_count(self) -> int:
        return len(self.process_tree())

    def stray_processes(self) -> int:
        return max(0, self.process_count() - self.baseline_processes)

    def stop(self) -> None:
        """Kill every process of the sandbox and reap bwrap; the files stay. Idempotent."""
        process = self.process
        if process is not None and process.poll() is None:  # a reaped pid may have been reused
            # The whole tree at once: bwrap's namespace would take its processes down with it,
            # but only after bwrap itself is gone, and that is not worth waiting for.
            for pid in self.process_tree():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        if process is not None:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - nothing ignores SIGKILL
                pass

    def kill(self) -> None:
        """Stop the sandbox and delete its files; idempotent."""
        with self._lock:
            if self._killed:
                return
            self._killed = True
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
        os.close(self._owner_lock)


def _blocking_reply(client: Any, msg_id: str, deadline: float, kernel: SandboxedKernel) -> dict[str, Any]:
    while True:
        if not kernel.alive():
            code = kernel.process.returncode if kernel.process else None
            raise SandboxStartError(f"the sandbox exited with status {code}; log: {kernel.log_tail()}")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        try:
            msg = client.get_shell_msg(timeout=min(remaining, 0.2))
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg  # type: ignore[no-any-return]


# -- the warm pool -----------------------------------------------------------------------------


class KernelPool:
    """Keeps ``size`` kernels started and ready; ``acquire`` hands one out and starts another.

    Every kernel started by the pool is killed by ``close`` (called at interpreter exit for the
    default pool), whether it is still waiting or in use.
    """

    def __init__(self, size: int = 2, *, limits: Limits | None = None, preload: tuple[str, ...] = (),
                 workers: int = 2, base_dir: str | None = None) -> None:
        self.size = max(0, size)
        self.limits = limits or Limits()
        self.preload = preload
        self.base_dir = base_dir
        self._ready: deque[SandboxedKernel] = deque()
        self._live: set[SandboxedKernel] = set()
        self._cond = threading.Condition()
        self._starting = 0
        self._waiting = 0
        self._closed = False
        self._error: BaseException | None = None
        self._failures = 0
        self._last_failure = 0.0
        self._threads = [
            threading.Thread(target=self._refill, name=f"omnienv-kernel-pool-{i}", daemon=True)
            for i in range(max(1, workers))
        ]
        for thread in self._threads:
            thread.start()

    def __repr__(self) -> str:
        return f"KernelPool(size={self.size}, ready={len(self._ready)}, live={len(self._live)})"

    @property
    def ready(self) -> int:
        return len(self._ready)

    def live_kernels(self) -> list[SandboxedKernel]:
        with self._cond:
            return [k for k in self._live if k.alive()]

    def _wanted(self) -> int:
        return self.size + self._waiting - len(self._ready) - self._starting

    def _refill(self) -> None:
        if threading.current_thread() is self._threads[0]:
            sweep_stale(self.base_dir)
        while True:
            with self._cond:
                while not self._closed and (self._wanted() <= 0 or self._backing_off()):
                    self._cond.wait(timeout=0.5 if self._failures else None)
                if self._closed:
                    return
                self._starting += 1
            kernel: SandboxedKernel | None = None
            try:
                kernel = SandboxedKernel(self.limits, self.preload, self.base_dir)
                with self._cond:
                    self._live.add(kernel)
                kernel.start()
            except BaseException as exc:
                if kernel is not None:
                    kernel.kill()
                with self._cond:
                    self._live.discard(kernel)  # type: ignore[arg-type]
                    self._starting -= 1
                    self._error, self._failures = exc, self._failures + 1
                    self._last_failure = time.monotonic()
                    self._cond.notify_all()
                continue
            with self._cond:
                self._starting -= 1
                self._failures = 0
                self._error = None
                if self._closed:
                    self._live.discard(kernel)
                    kernel.kill()
                    return
                self._ready.append(kernel)
                self._cond.notify_all()

    def _backing_off(self) -> bool:
        return self._failures > 0 and time.monotonic() - self._last_failure < min(5.0, 0.2 * self._failures)

    def _pop_ready(self) -> SandboxedKernel | None:
        while self._ready:
            kernel = self._ready.popleft()
            if kernel.alive():
                self._cond.notify_all()
                return kernel
            self._live.discard(kernel)
            kernel.kill()
        return None

    def try_acquire(self) -> SandboxedKernel | None:
        """A ready kernel at once, or None."""
        with self._cond:
            return self._pop_ready()

    def acquire(self, timeout: float = START_TIMEOUT) -> SandboxedKernel:
        """A ready kernel, waiting for one to start if none is; typed errors when none can."""
        deadline = time.monotonic() + timeout
        with self._cond:
            if self._closed:
                raise SandboxStartError("the kernel pool is closed")
            failures_before = self._failures
            self._waiting += 1
            self._cond.notify_all()
            try:
                while True:
                    kernel = self._pop_ready()
                    if kernel is not None:
                        return kernel
                    if self._error is not None and self._failures > failures_before:
                        raise SandboxStartError(f"cannot start a sandboxed kernel: {self._error}")
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._closed:
                        raise SandboxStartError(f"no kernel became ready within {timeout:g} s")
                    self._cond.wait(remaining)
            finally:
                self._waiting -= 1

    async def aacquire(self, timeout: float = START_TIMEOUT) -> SandboxedKernel:
        kernel = self.try_acquire()
        if kernel is not None:
            return kernel
        return await asyncio.to_thread(self.acquire, timeout)

    def release(self, kernel: SandboxedKernel) -> None:
        """Kill a kernel handed out by ``acquire`` (kernels are never reused)."""
        with self._cond:
            self._live.discard(kernel)
        kernel.kill()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            kernels = list(self._live)
            self._live.clear()
            self._ready.clear()
            self._cond.notify_all()
        for kernel in kernels:
            kernel.kill()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=START_TIMEOUT)
        # A start that was under way when we closed kills its own kernel; catch any stragglers.
        with self._cond:
            stragglers = list(self._live)
            self._live.clear()
        for kernel in stragglers:
            kernel.kill()

    def __enter__(self) -> KernelPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_default_pool: KernelPool | None = None
_default_lock = threading.Lock()


def default_pool() -> KernelPool:
    """The process-wide pool; ``OMNIENV_JUPYTER_POOL_SIZE`` sets its size (default 2)."""
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool._closed:
            size = int(os.environ.get("OMNIENV_JUPYTER_POOL_SIZE", "2"))
            _default_pool = KernelPool(size)
            atexit.register(_default_pool.close)
        return _default_pool


# -- the async face of one episode's kernel ----------------------------------------------------


class JupyterSandbox:
    """One episode's kernel: cells with time limits, shell commands, files. See module docs."""

    work_dir = HOME

    def __init__(self, kernel: SandboxedKernel, pool: KernelPool, limits: OutputLimits | None = None) -> None:
        self.kernel = kernel
        self.pool = pool
        self.output_limits = limits or OutputLimits()
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        # An episode dropped without close() still frees its kernel when collected.
        self._release = weakref.finalize(self, pool.release, kernel)

    @classmethod
    async def open(cls, pool: KernelPool | None = None, limits: OutputLimits | None = None) -> JupyterSandbox:
        """A sandbox on a fresh kernel from ``pool`` (the default pool when None)."""
        pool = pool or default_pool()
        kernel = await pool.aacquire()
        sandbox = cls(kernel, pool, limits)
        try:
            await sandbox._connect()
        except BaseException:
            await sandbox.close()
            raise
        return sandbox

    def __repr__(self) -> str:
        return f"JupyterSandbox({self.kernel!r})"

    # -- connection ---------------------------------------------------------------------------

    async def _connect(self) -> Any:
        """A client on this loop whose iopub subscription is known to be live."""
        loop = asyncio.get_running_loop()
        if self._client is not None and self._loop is loop:
            return self._client
        import zmq.asyncio
        from jupyter_client.asynchronous import AsyncKernelClient

        self._disconnect()
        client = AsyncKernelClient(context=zmq.asyncio.Context.instance())
        client.load_connection_info(self.kernel.connection)
        client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=True)
        self._client, self._loop = client, loop
        deadline = loop.time() + 10.0
        # A SUB socket joins asynchronously: ask for kernel_info until its status shows on iopub.
        while True:
            self._ensure_alive()
            msg_id = client.kernel_info()
            with contextlib.suppress(queue.Empty):
                while True:
                    msg = await client.get_iopub_msg(timeout=0.05)
                    if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status":
                        await self._drain_reply(client, msg_id)
                        return client
            if loop.time() > deadline:
                raise KernelDiedError(f"the kernel stopped answering; log: {self.kernel.log_tail()}")

    def _disconnect(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.stop_channels()
            self._client = None

    def _ensure_alive(self) -> None:
        if not self.kernel.alive():
            process = self.kernel.process
            status = process.returncode if process is not None else None
            raise KernelDiedError(
                f"the kernel died (exit status {status}); start a new episode. log: {self.kernel.log_tail()}"
            )

    async def _drain_reply(self, client: Any, msg_id: str) -> dict[str, Any] | None:
        with contextlib.suppress(queue.Empty):
            while True:
                msg = await client.get_shell_msg(timeout=1.0)
                if msg["parent_header"].get("msg_id") == msg_id:
                    return msg  # type: ignore[no-any-return]
        return None

    # -- execution ----------------------------------------------------------------------------

    async def run_code(self, code: str, timeout: float = 30.0) -> CellOutput:
        return await self._execute(code, timeout, silent=False)

    async def run_shell(self, command: str, timeout: float = 30.0) -> CellOutput:
        inner = max(1.0, timeout - 1.0)
        return await self._execute(f"_omnienv_shell({command!r}, {inner!r})", timeout, silent=True)

    async def _execute(self, code: str, timeout: float, *, silent: bool) -> CellOutput:
        if self._closed:
            raise KernelDiedError("the sandbox is closed")
        self._ensure_alive()
        client = await self._connect()
        loop = asyncio.get_running_loop()
        msg_id = client.execute(code, silent=silent, store_history=not silent, allow_stdin=False,
                                stop_on_error=False)
        collect = _Collector(self.output_limits)
        deadline = loop.time() + timeout
        interrupted = False
        while True:
            now = loop.time()
            if now >= deadline:
                if interrupted:
                    return await self._replace_kernel(collect, timeout)
                self._interrupt(client)
                interrupted, deadline = True, now + INTERRUPT_GRACE
            try:
                msg = await client.get_iopub_msg(timeout=min(POLL_INTERVAL, max(deadline - now, 0.001)))
            except queue.Empty:
                self._ensure_alive()
                if self.kernel.stray_processes() > MAX_STRAY_PROCESSES:
                    return await self._restarted(collect, self._too_many_processes())
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                break
            collect.add(msg)
        reply = await self._drain_reply(client, msg_id)
        output = collect.output()
        if reply is not None:
            output.execution_count = reply["content"].get("execution_count")
        if interrupted:
            output.timed_out = True
            output.error = CellError("TimeoutError", f"the cell exceeded its {timeout:g} s time limit", "")
            output.notes.append(f"The cell ran past its {timeout:g} s time limit and was interrupted.")
        if self.kernel.stray_processes() > MAX_STRAY_PROCESSES:
            await self._swap_kernel()
            output.restarted = True
            output.notes.append(self._too_many_processes())
        return output

    def _interrupt(self, client: Any) -> None:
        client.control_channel.send(client.session.msg("interrupt_request", {}))

    def _too_many_processes(self) -> str:
        return (f"The cell started more than {MAX_STRAY_PROCESSES} processes, so the kernel was "
                "restarted: variables are lost, files are kept.")

    async def _restarted(self, collect: _Collector, note: str) -> CellOutput:
        await self._swap_kernel()
        output = collect.output()
        output.restarted = True
        output.error = CellError("RuntimeError", note, "")
        output.notes.append(note)
        return output

    async def _replace_kernel(self, collect: _Collector, timeout: float) -> CellOutput:
        output = await self._restarted(collect, (
            f"The cell ran past its {timeout:g} s time limit and did not stop when interrupted, so the "
            "kernel was restarted: variables are lost, files are kept."
        ))
        output.timed_out = True
        output.error = CellError("TimeoutError", f"the cell exceeded its {timeout:g} s time limit", "")
        return output

    async def _swap_kernel(self) -> None:
        """Replace a wedged kernel with a fresh one from the pool, moving the work files over."""
        self._disconnect()
        old = self.kernel
        await asyncio.to_thread(old.stop)
        new = await self.pool.aacquire()
        for entry in old.host_work_dir.iterdir():
            with contextlib.suppress(OSError, shutil.Error):
                shutil.move(str(entry), str(new.host_work_dir / entry.name))
        self._release.detach()
        await asyncio.to_thread(self.pool.release, old)
        self.kernel = new
        self._release = weakref.finalize(self, self.pool.release, new)
        await self._connect()

    # -- files and lifetime -------------------------------------------------------------------

    async def write_file(self, path: str, data: bytes) -> None:
        target = (self.kernel.host_work_dir / path).resolve()
        if self.kernel.host_work_dir.resolve() not in target.parents:
            raise ValueError(f"'{path}' is outside the work directory; use a relative path inside it")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._disconnect()
        await asyncio.to_thread(self._release)  # kill, reap and delete off the event loop

    def kill_kernel(self) -> None:
        """Kill the kernel as a crash would (for tests of failure handling)."""
        self.kernel.stop()


class _Collector:
    """Gathers one execution's iopub messages into a bounded :class:`CellOutput`."""

    def __init__(self, limits: OutputLimits) -> None:
        self.limits = limits
        self.stdout = BoundedText(limits.stream_chars)
        self.stderr = BoundedText(limits.stream_chars)
        self.results: list[str] = []
        self.images: list[bytes] = []
        self.notes: list[str] = []
        self.error: CellError | None = None
        self.dropped_images = 0

    def add(self, msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            (self.stderr if content.get("name") == "stderr" else self.stdout).add(content.get("text", ""))
        elif kind in ("execute_result", "display_data"):
            self._add_data(content.get("data", {}))
        elif kind == "error":
            traceback = strip_ansi("\n".join(content.get("traceback", [])))
            limit = self.limits.traceback_chars
            if len(traceback) > limit:
                traceback = "[... traceback shortened ...]\n" + traceback[-limit:]
            self.error = CellError(content.get("ename", "Error"), content.get("evalue", ""), traceback)

    def _add_data(self, data: dict[str, Any]) -> None:
        png = data.get("image/png")
        if png:
            raw = base64.b64decode(png)
            if len(self.images) < self.limits.images and len(raw) <= self.limits.image_bytes:
                self.images.append(raw)
            else:
                self.dropped_images += 1
            return
        text = data.get("text/plain")
        if text is not None:
            text = strip_ansi(str(text))
            limit = self.limits.result_chars
            if len(text) > limit:
                text = text[:limit] + f"\n[... {len(text) - limit} characters omitted ...]"
            if len(self.results) < 5:
                self.results.append(text)

    def output(self) -> CellOutput:
        notes = list(self.notes)
        if self.dropped_images:
            notes.append(f"{self.dropped_images} image(s) not shown (at most {self.limits.images} per "
                         f"cell, {self.limits.image_bytes} bytes each).")
        return CellOutput(self.stdout.value(), self.stderr.value(), list(self.results), list(self.images),
                          self.error, None, notes)


async def open_code_sandbox(backend: str | None = None, *, pool: KernelPool | None = None) -> CodeSandbox:
    """A fresh code sandbox from ``backend``: ``"local"`` (the default) or ``"e2b"``.

    ``OMNIENV_CODE_SANDBOX`` picks the backend when none is given; E2B needs ``E2B_API_KEY``
    and the ``e2b-code-interpreter`` package, and is never chosen unless asked for.
    """
    backend = backend or os.environ.get("OMNIENV_CODE_SANDBOX", "local")
    if backend == "local":
        return await JupyterSandbox.open(pool)
    if backend == "e2b":
        from omnienv.sandboxes.e2b import E2BSandbox

        return await E2BSandbox.open()
    raise ValueError(f"unknown code sandbox backend '{backend}': use 'local' or 'e2b'")
