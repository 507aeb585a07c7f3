"""Runaway code in a sandboxed Jupyter kernel, and kernels that die: stopped, and blamed on the right side.

Memory and fork bombs, loops and children that ignore interrupts must be stopped without harming
other sessions; whether the episode then ends as the agent's doing (``AgentCausedEnd``) or as an
infrastructure failure (``EnvironmentFailure``) decides who is charged for it, so both are checked.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from omnienv.core import AgentCausedEnd, EnvironmentFailure
from omnienv.sandboxes.cgroups import probe
from omnienv.sandboxes.jupyter import JupyterSandbox, KernelDiedError, KernelPool
from omnienv.sandboxes.jupyter.session import INTERRUPT_GRACE
from tests.sandboxes.jupyter_sandboxes import (
    open_sandbox,
    run,
    sandbox_run,
)


def test_a_memory_bomb_raises_memory_error_and_the_kernel_lives(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await open_sandbox(pool)
        try:
            out = await sandbox.run_code("hog = []\nwhile True:\n    hog.append(bytearray(50 * 2**20))", 60)
            assert out.error is not None and out.error.name == "MemoryError"
            out = await sandbox.run_code("del hog\nprint('alive')")
            assert out.stdout == "alive\n"
        finally:
            await sandbox.close()

    run(go())


@pytest.mark.skipif(
    os.geteuid() == 0 and "pids" not in probe().parents,
    reason="no pids cgroup, and RLIMIT_NPROC does not bind a sandbox mapped to root",
)
def test_a_fork_bomb_is_stopped_and_other_sessions_are_unaffected(pool: KernelPool) -> None:
    async def go() -> None:
        bomb, other = await open_sandbox(pool), await open_sandbox(pool)
        try:
            await other.run_code("kept = 7")
            try:
                out = await bomb.run_code("import os\nwhile True:\n    os.fork()", 5)
            except AgentCausedEnd as end:
                # The interrupt can be lost: a SIGINT that lands while the kernel runs one of its
                # modules' at-fork hooks (logging's lock) is swallowed by Python ("Exception ignored
                # in"), and the loop forks on. Then the cell did not stop, and the episode is over.
                assert end.reason == "time_limit" and not bomb.kernel.alive() and not bomb.kernel.pids(), end
            else:
                assert not out.success and out.error is not None  # stopped by the limits, or at the time limit
                assert out.timed_out or out.error.name == "BlockingIOError", out
                assert bomb.kernel.stray_processes() == 0 and "were stopped" in out.notes[-1]
                out = await bomb.run_code("print('fresh')")
                assert out.stdout == "fresh\n"
            started = time.monotonic()
            out = await other.run_code("kept")
            assert out.results == ["7"] and time.monotonic() - started < 2
        finally:
            await bomb.close()
            await other.close()

    run(go())


def test_the_interrupt_grace_starts_once_the_cells_processes_are_killed(
    pool: KernelPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork bomb's processes starve the kernel of the sandbox's CPU until they are killed, which
    takes seconds on a loaded machine: the kernel's time to answer the interrupt starts after that."""
    sent: list[Any] = []

    def interrupt_later(self: JupyterSandbox, client: Any) -> None:
        sent.append(client)

    async def slow_kill(self: JupyterSandbox) -> int:
        await asyncio.sleep(INTERRUPT_GRACE + 0.5)
        for client in sent:  # the kernel could not have run before: the interrupt lands now
            original_interrupt(self, client)
        return 0

    original_interrupt = JupyterSandbox._interrupt
    monkeypatch.setattr(JupyterSandbox, "_interrupt", interrupt_later)
    monkeypatch.setattr(JupyterSandbox, "_kill_strays", slow_kill)

    async def go() -> None:
        sandbox = await open_sandbox(pool)
        try:
            out = await sandbox.run_code("while True:\n    pass", 1)
            assert sent and out.timed_out and sandbox.kernel.alive(), out
        finally:
            await sandbox.close()

    run(go())


def test_an_infinite_loop_is_interrupted_and_the_kernel_keeps_its_state(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await open_sandbox(pool)
        try:
            await sandbox.run_code("kept = 'yes'")
            started = time.monotonic()
            out = await sandbox.run_code("while True:\n    pass", 1.5)
            assert out.timed_out and not out.restarted and time.monotonic() - started < 5
            assert "time limit" in out.notes[0]
            assert (await sandbox.run_code("kept")).results == ["'yes'"]
        finally:
            await sandbox.close()

    run(go())


def test_an_interrupt_that_is_swallowed_is_sent_again(pool: KernelPool) -> None:
    """Python drops a SIGINT that lands in an at-fork hook; the cell here drops the first one itself.
    The interrupt is sent again, so the cell stops and the episode goes on."""

    async def go() -> None:
        sandbox = await open_sandbox(pool)
        try:
            code = (
                "import signal\n"
                "def swallow(*_):\n"
                "    signal.signal(signal.SIGINT, signal.default_int_handler)  # the next one interrupts\n"
                "signal.signal(signal.SIGINT, swallow)\n"
                "while True:\n"
                "    pass"
            )
            started = time.monotonic()
            out = await sandbox.run_code(code, 1)
            assert out.timed_out and out.error is not None and sandbox.kernel.alive(), out
            assert time.monotonic() - started < 1 + INTERRUPT_GRACE
            assert (await sandbox.run_code("print('after')")).stdout == "after\n"
        finally:
            await sandbox.close()

    run(go())


def test_a_loop_that_ignores_interrupts_ends_the_episode_as_the_agents_doing(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await open_sandbox(pool)
        try:
            code = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
            started = time.monotonic()
            with pytest.raises(AgentCausedEnd) as caught:
                await sandbox.run_code(code, 1)
            assert caught.value.reason == "time_limit" and time.monotonic() - started < 8
            assert not sandbox.kernel.alive()
        finally:
            await sandbox.close()

    run(go())


def test_a_child_that_ignores_interrupts_is_killed_at_the_time_limit(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await open_sandbox(pool)
        try:
            code = "import subprocess\nsubprocess.run(['sh', '-c', 'trap \"\" INT; sleep 60'])\nprint('after')"
            out = await sandbox.run_code(code, 1)
            assert out.timed_out and sandbox.kernel.alive() and sandbox.kernel.stray_processes() == 0, out
            assert (await sandbox.run_code("print('alive')")).stdout == "alive\n"
        finally:
            await sandbox.close()

    run(go())


def test_a_killed_kernel_is_a_typed_infrastructure_failure(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await open_sandbox(pool)
        try:
            sandbox.kill_kernel()
            with pytest.raises(KernelDiedError) as caught:
                await sandbox.run_code("print(1)")
            assert isinstance(caught.value, EnvironmentFailure) and caught.value.code == "KERNEL_DIED"
        finally:
            await sandbox.close()
        sandbox = await open_sandbox(pool)  # the pool goes on serving fresh kernels
        try:
            assert (await sandbox.run_code("print(2)")).stdout == "2\n"
        finally:
            await sandbox.close()

    run(go())


def test_a_kernel_that_kills_itself_is_the_agents_doing(pool: KernelPool) -> None:
    with pytest.raises(AgentCausedEnd) as caught:
        sandbox_run(pool, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert caught.value.reason == "kernel_died" and "exit status 137" in caught.value.message
    assert not isinstance(caught.value, EnvironmentFailure)
