"""Jupyter kernels in sandboxes, started ahead of time in a warm pool.

Bottom up:

- :mod:`.packages`: what the kernel's Python sees: the base installation's standard library and a
  site directory of only the kernel's packages (never omnienv's code or tasks);
- :mod:`.inkernel`: the code that runs inside the sandbox (boot, output bounds, the shell helper),
  real modules mounted read-only there;
- :mod:`.kernel`: :class:`SandboxedKernel`, one ``ipykernel`` in its own
  :class:`~omnienv.sandboxes.sandbox.Sandbox` (per-sandbox cgroup, capped disks, minimal
  environment), and the one rule that says whose fault a dead kernel is;
- :mod:`.pool`: :class:`KernelPool`, a thin use of :class:`~omnienv.sandboxes.pool.WarmPool`;
- :mod:`.channels` and :mod:`.collector`: the host's end of the ZMQ channels (a hard frame limit,
  checked before decoding) and the bounded gathering of a cell's outputs;
- :mod:`.session`: :class:`JupyterSandbox`, the async face one episode uses.

A kernel that dies of the agent's code (it killed or crashed itself, exited, used up the
sandbox's memory, ran past its time limit, sent more than the output limit) ends the episode as
an ordinary, scored outcome (:class:`~omnienv.core.AgentCausedEnd`); a kernel the host killed,
or one that could not start, is an infrastructure failure (:class:`KernelDiedError`,
:class:`SandboxStartError`).
"""

from omnienv.sandboxes.jupyter.errors import KernelDiedError, SandboxStartError
from omnienv.sandboxes.jupyter.kernel import KERNEL_ENV, SandboxedKernel
from omnienv.sandboxes.jupyter.pool import KernelPool, default_pool, sweep_stale
from omnienv.sandboxes.jupyter.session import JupyterSandbox, code_sandbox_work_dir, open_code_sandbox

__all__ = [
    "KERNEL_ENV",
    "JupyterSandbox",
    "KernelDiedError",
    "KernelPool",
    "SandboxStartError",
    "SandboxedKernel",
    "code_sandbox_work_dir",
    "default_pool",
    "open_code_sandbox",
    "sweep_stale",
]
