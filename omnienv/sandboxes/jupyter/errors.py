"""The Jupyter sandbox's errors, and the one rule that says whose fault a dead kernel is.

A kernel that could not start is :class:`SandboxStartError`; a kernel the host killed (the
session closed, the server shut down, a test's ``kill_kernel``) is :class:`KernelDiedError`. Both
are infrastructure failures: the episode is flagged and masked. A kernel that died of what the
agent's code did (it killed or crashed itself, exited, hit the sandbox's memory limit, ran past
its time limit, sent more than the output limit) raises
:class:`~omnienv.core.AgentCausedEnd` instead (see :func:`omnienv.sandboxes.jupyter.kernel.
SandboxedKernel.death`): the episode ends and is scored.
"""

from __future__ import annotations

from omnienv.core import EnvironmentFailure

__all__ = ["KernelDiedError", "SandboxStartError"]


class KernelDiedError(EnvironmentFailure):
    """The host lost the kernel (it killed it, or closed the sandbox); the episode cannot go on."""

    code = "KERNEL_DIED"


class SandboxStartError(EnvironmentFailure):
    """A sandboxed kernel did not start (bubblewrap refused, or the kernel never became ready)."""

    code = "SANDBOX_START_FAILED"
