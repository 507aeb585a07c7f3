"""The async face one episode uses: :class:`JupyterSandbox`, a :class:`~omnienv.sandboxes.cells.CodeSandbox`.

A cell runs with a time limit: past it the kernel is interrupted and the agent's background
processes are killed; a cell that still does not stop within :data:`INTERRUPT_GRACE` ends the
episode (``AgentCausedEnd``, ``time_limit``). At the end of **every** cell, every process the
cell left in the sandbox is killed: nothing the agent starts outlives the cell that started it
(the kernel's own state, variables and files, is kept). A kernel that dies is classified by
:meth:`~omnienv.sandboxes.jupyter.kernel.SandboxedKernel.death`: the agent's doing ends the
episode scored (``AgentCausedEnd``), the host's is an infrastructure failure (``KernelDiedError``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import queue
import sys
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn

from omnienv.core import AgentCausedEnd
from omnienv.core.threads import to_blocking_thread
from omnienv.sandboxes.bubblewrap import HOME
from omnienv.sandboxes.cells import CellError, CellOutput, CodeSandbox, OutputLimits
from omnienv.sandboxes.jupyter.channels import Channels, frame_limit
from omnienv.sandboxes.jupyter.collector import OutputCollector
from omnienv.sandboxes.jupyter.errors import KernelDiedError
from omnienv.sandboxes.jupyter.inkernel.shell import NAME as SHELL_HELPER
from omnienv.sandboxes.jupyter.kernel import SandboxedKernel
from omnienv.sandboxes.jupyter.pool import KernelPool, default_pool

_CLIENT_MODULE = "jupyter_client.asynchronous.client"
"""What :class:`Channels` imports (zmq with it) to talk to a kernel."""

if TYPE_CHECKING:
    from omnienv.sandboxes.e2b import E2BSandbox

__all__ = ["JupyterSandbox", "code_sandbox_work_dir", "open_code_sandbox"]

INTERRUPT_GRACE = 3.0
"""How long an interrupted cell has to stop, once the processes it left are killed, before the episode ends."""
RESEND_AFTER = 1.0
"""How long an interrupted cell may show no sign of the interrupt before it is sent again: Python
swallows a SIGINT that lands in an at-fork hook (logging's lock) of a cell that forks. A second
one that lands after the cell has stopped is caught by ipykernel's dispatcher, not the kernel's end."""
POLL_INTERVAL = 0.25
IDLE_GRACE = 1.0
"""After the reply, how long to wait for the kernel's idle status (a flood of output may drop it)."""
CONNECT_TIMEOUT = 10.0


class JupyterSandbox:
    """One episode's kernel: cells with time limits, shell commands, files. See module docs."""

    work_dir = HOME

    def __init__(self, kernel: SandboxedKernel, pool: KernelPool, limits: OutputLimits | None = None) -> None:
        self.kernel = kernel
        self.pool = pool
        self.output_limits = limits or OutputLimits()
        self._channels: Channels | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._cells = 0
        # An episode dropped without close() still frees its kernel when collected.
        self._release = weakref.finalize(self, pool.release, kernel)

    @classmethod
    async def open(cls, pool: KernelPool | None = None, limits: OutputLimits | None = None) -> JupyterSandbox:
        """A sandbox on a fresh kernel from ``pool`` (the default pool when None)."""
        if pool is None:  # made off the loop: the first one reads every package's file list, 1-2 s
            pool = await to_blocking_thread(default_pool)
        if _CLIENT_MODULE not in sys.modules:  # imported off the loop too: about 0.3 s, once a process
            await to_blocking_thread(importlib.import_module, _CLIENT_MODULE)
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
        if self._channels is not None and self._loop is loop:
            return self._channels.client
        self._disconnect()
        channels = self._channels = Channels(self.kernel.connection, self.output_limits)
        self._loop = loop
        client = channels.client
        deadline = loop.time() + CONNECT_TIMEOUT
        # A SUB socket joins asynchronously: ask for kernel_info until its status shows on iopub.
        while True:
            self._ensure_alive()
            msg_id = client.kernel_info()
            with contextlib.suppress(queue.Empty):
                while True:
                    msg = await self._receive(client.get_iopub_msg, 0.05)
                    if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status":
                        await self._drain_reply(client, msg_id)
                        return client
            if loop.time() > deadline:
                if self._cells:  # the agent's code ran in it: a kernel it wedged is its own doing
                    raise AgentCausedEnd("The kernel stopped answering. The episode is over.", reason="kernel_died")
                raise KernelDiedError(f"the kernel stopped answering; log: {self.kernel.log_tail()}")

    def _disconnect(self) -> None:
        if self._channels is not None:
            self._channels.close()
            self._channels = None

    def _ensure_alive(self) -> None:
        if self._closed:
            raise KernelDiedError("the sandbox is closed")
        if not self.kernel.alive():
            raise self.kernel.death()

    async def _drain_reply(self, client: Any, msg_id: str, timeout: float = 1.0) -> dict[str, Any] | None:
        with contextlib.suppress(queue.Empty):
            while True:
                msg = await self._receive(client.get_shell_msg, timeout)
                if msg["parent_header"].get("msg_id") == msg_id:
                    return msg
        return None

    # -- execution ----------------------------------------------------------------------------

    async def run_code(self, code: str, timeout: float = 30.0) -> CellOutput:
        return await self._execute(code, timeout, silent=False)

    async def run_shell(self, command: str, timeout: float = 30.0) -> CellOutput:
        inner = max(1.0, timeout - 1.0)
        return await self._execute(f"{SHELL_HELPER}({command!r}, {inner!r})", timeout, silent=True)

    async def _execute(self, code: str, timeout: float, *, silent: bool) -> CellOutput:
        self._ensure_alive()
        client = await self._connect()
        loop = asyncio.get_running_loop()
        self.kernel.mark_cell()
        self._cells += 1
        msg_id = client.execute(code, silent=silent, store_history=not silent, allow_stdin=False, stop_on_error=False)
        collect = OutputCollector(self.output_limits)
        deadline = loop.time() + timeout
        interrupted, stopped = False, 0
        resend_at, raised = 0.0, False  # raised: the cell published its error (the interrupt landed)
        reply: dict[str, Any] | None = None
        replied_at = 0.0
        while True:
            now = loop.time()
            if reply is not None and now > replied_at + IDLE_GRACE:
                break  # the idle status was lost in a flood of output; the reply is what counts
            if now >= deadline:
                if interrupted:
                    await self._end(
                        AgentCausedEnd(
                            f"The cell ran past its {timeout:g} s time limit and did not stop when interrupted, "
                            "so the kernel was stopped. The episode is over.",
                            reason="time_limit",
                        )
                    )
                self._interrupt(client)
                stopped += await self._kill_strays()  # a child that ignores the interrupt must not hold the cell
                # the grace starts once the strays are gone: a fork bomb's hundreds of processes share the
                # sandbox's CPU quota with the kernel, which cannot answer the interrupt until they die
                interrupted, deadline = True, loop.time() + INTERRUPT_GRACE
                resend_at = loop.time() + RESEND_AFTER
            elif interrupted and not raised and reply is None and now >= resend_at:
                self._interrupt(client)  # the first may have been swallowed
                resend_at = now + RESEND_AFTER
            try:
                msg = await self._receive(client.get_iopub_msg, min(POLL_INTERVAL, max(deadline - now, 0.001)))
            except queue.Empty:
                await self._check_link()
                if reply is None:
                    reply = await self._drain_reply(client, msg_id, timeout=0)
                    replied_at = loop.time()
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                break
            raised = raised or msg["msg_type"] == "error"
            collect.add(msg)
        if reply is None:
            reply = await self._drain_reply(client, msg_id)
        return await self._finish(collect, reply, timeout, interrupted, stopped)

    async def _finish(
        self,
        collect: OutputCollector,
        reply: dict[str, Any] | None,
        timeout: float,
        interrupted: bool,
        stopped: int,
    ) -> CellOutput:
        strays = stopped + await self._kill_strays()
        output = await to_blocking_thread(collect.output)  # it decodes the cell's images
        if reply is not None:
            count = reply.get("content", {}).get("execution_count")
            output.execution_count = count if isinstance(count, int) else None
        if interrupted:
            output.timed_out = True
            output.error = CellError("TimeoutError", f"the cell exceeded its {timeout:g} s time limit", "")
            output.notes.append(f"The cell ran past its {timeout:g} s time limit and was interrupted.")
        if strays:
            output.notes.append(
                f"{strays} process(es) the cell left running were stopped: nothing a cell starts outlives it."
            )
        if self.kernel.memory_limit_hit():
            output.notes.append(
                f"The sandbox hit its memory limit ({self.kernel.limits.total_memory_bytes >> 20} "
                "MiB for all its processes together): a process was killed."
            )
        return output

    def _interrupt(self, client: Any) -> None:
        client.control_channel.send(client.session.msg("interrupt_request", {}))

    async def _kill_strays(self) -> int:
        if not self.kernel.stray_processes():
            return 0
        return await to_blocking_thread(self.kernel.kill_strays)

    async def _check_link(self) -> None:
        """Between messages: the kernel is alive and its connection whole, or the episode ends."""
        self._ensure_alive()
        if self._channels is None or not self._channels.broken():
            return
        for _ in range(40):  # a kernel that died closes its sockets first: let its process be reaped
            if not self.kernel.alive():
                raise self.kernel.death()
            await asyncio.sleep(0.025)
        await self._end(
            AgentCausedEnd(
                f"The kernel sent a message over the {frame_limit(self.output_limits) >> 20} MiB output limit "
                "(or broke its own connection), so it was stopped. The episode is over.",
                reason="output_limit",
            )
        )

    async def _receive(self, get: Callable[..., Awaitable[Any]], timeout: float) -> dict[str, Any]:
        """The kernel's next message on a channel, in the shape the host reads; ``queue.Empty`` when none.

        The agent's code can write to the kernel's sockets itself: a message that fails its
        signature or has the wrong shape ends the episode as the agent's doing (``output_limit``,
        as a broken channel does), never as an exception that would void it."""
        try:
            msg = await get(timeout=timeout)
        except queue.Empty:
            raise
        except Exception as exc:
            await self._unreadable(f"{type(exc).__name__}: {exc}")
        if not (
            type(msg) is dict
            and isinstance(msg.get("parent_header"), dict)
            and isinstance(msg.get("msg_type"), str)
            and isinstance(msg.get("content"), dict)
        ):
            await self._unreadable("a message without the fields every Jupyter message has")
        return msg

    async def _unreadable(self, what: str) -> NoReturn:
        if not self._cells:  # before the agent's first cell, only the host's own kernel has spoken
            raise KernelDiedError(f"the kernel sent a message the host cannot read ({what[:200]})")
        await self._end(
            AgentCausedEnd(
                "The kernel sent a message the host cannot read (its signature or its shape was wrong), "
                "so it was stopped. The episode is over.",
                reason="output_limit",
            )
        )

    async def _end(self, end: AgentCausedEnd) -> NoReturn:
        """Stop the kernel (the agent's doing), then end the episode."""
        self._disconnect()
        await to_blocking_thread(self.kernel.stop)
        raise end

    # -- files and lifetime -------------------------------------------------------------------

    async def write_file(self, path: str, data: bytes) -> None:
        """Create a file in the work directory, never following a symlink (paths outside it are refused)."""
        try:
            self.kernel.sandbox.write_work_file(path, data)
        except ValueError as exc:
            raise ValueError(f"'{path}' is outside the work directory; use a relative path inside it") from exc

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._disconnect()
        await to_blocking_thread(self._release)  # kill, reap and delete off the event loop

    def kill_kernel(self) -> None:
        """Kill the kernel from the host (for tests of failure handling): an infrastructure failure."""
        self.kernel.stop()


def _backend(backend: str | None) -> type[JupyterSandbox] | type[E2BSandbox]:
    backend = backend or os.environ.get("OMNIENV_CODE_SANDBOX", "local")
    if backend == "local":
        return JupyterSandbox
    if backend == "e2b":
        from omnienv.sandboxes.e2b import E2BSandbox

        return E2BSandbox
    raise ValueError(f"unknown code sandbox backend '{backend}': use 'local' or 'e2b'")


def code_sandbox_work_dir(backend: str | None = None) -> str:
    """The working directory agents see in ``backend``'s sandboxes, known without opening one."""
    return _backend(backend).work_dir


async def open_code_sandbox(backend: str | None = None, *, pool: KernelPool | None = None) -> CodeSandbox:
    """A fresh code sandbox from ``backend``: ``"local"`` (the default) or ``"e2b"``.

    ``OMNIENV_CODE_SANDBOX`` picks the backend when none is given; E2B needs ``E2B_API_KEY``
    and the ``e2b-code-interpreter`` package, and is never chosen unless asked for.
    """
    chosen = _backend(backend)
    if chosen is JupyterSandbox:
        return await JupyterSandbox.open(pool)
    return await chosen.open()
