"""The warm pool of sandboxed kernels: a thin use of :class:`omnienv.sandboxes.pool.WarmPool`."""

from __future__ import annotations

import atexit
import os
import threading

from omnienv.sandboxes.bubblewrap import Limits
from omnienv.sandboxes.cells import OutputLimits
from omnienv.sandboxes.jupyter.errors import SandboxStartError
from omnienv.sandboxes.jupyter.kernel import PREFIX, START_TIMEOUT, SandboxedKernel
from omnienv.sandboxes.jupyter.packages import KERNEL_PACKAGES, kernel_view
from omnienv.sandboxes.pool import WarmPool
from omnienv.sandboxes.upkeep import sweep_stale as sweep_sandboxes

__all__ = ["KernelPool", "default_pool", "sweep_stale"]


def sweep_stale(base_dir: str | None = None, *, unlocked_grace: float = 60.0) -> int:
    """Delete the sandboxes of kernels whose owner died (files, mounts, cgroups); returns how many."""
    return sweep_sandboxes(base_dir, prefix=PREFIX, unlocked_grace=unlocked_grace)


class KernelPool:
    """Keeps ``size`` kernels started and ready; ``acquire`` hands one out and starts another.

    Every kernel started by the pool is killed by ``close`` (called at interpreter exit for the
    default pool), whether it is still waiting or in use. Kernels are never reused.
    """

    def __init__(
        self,
        size: int = 2,
        *,
        limits: Limits | None = None,
        preload: tuple[str, ...] = (),
        workers: int = 2,
        base_dir: str | None = None,
        output_limits: OutputLimits | None = None,
        packages: tuple[str, ...] = KERNEL_PACKAGES,
    ) -> None:
        self.limits = limits or Limits()
        self.preload = preload
        self.base_dir = base_dir
        self.output_limits = output_limits or OutputLimits()
        self.packages = packages
        # Now, not in the first start: writing missing bytecode (once per installation, seconds
        # where an installer skipped it) must not count against a kernel's start timeout.
        kernel_view(packages)
        self._pool: WarmPool[SandboxedKernel] = WarmPool(
            self._create,
            SandboxedKernel.kill,
            start=SandboxedKernel.start,
            alive=SandboxedKernel.alive,
            size=size,
            workers=workers,
            timeout=START_TIMEOUT,
            error=SandboxStartError,
            what="a sandboxed kernel",
            sweep=lambda: sweep_stale(base_dir),
            name="omnienv-kernel-pool",
        )

    def _create(self) -> SandboxedKernel:
        return SandboxedKernel(self.limits, self.preload, self.base_dir, self.output_limits, self.packages)

    def __repr__(self) -> str:
        return f"KernelPool(size={self.size}, ready={self.ready}, live={len(self.live_kernels())})"

    @property
    def size(self) -> int:
        return self._pool.size

    @property
    def ready(self) -> int:
        return self._pool.ready

    @property
    def closed(self) -> bool:
        return self._pool.closed

    _closed = closed  # the name older callers used

    def live_kernels(self) -> list[SandboxedKernel]:
        return self._pool.live()

    def try_acquire(self) -> SandboxedKernel | None:
        return self._pool.try_acquire()

    def acquire(self, timeout: float = START_TIMEOUT) -> SandboxedKernel:
        return self._pool.acquire(timeout)

    async def aacquire(self, timeout: float = START_TIMEOUT) -> SandboxedKernel:
        return await self._pool.aacquire(timeout)

    def release(self, kernel: SandboxedKernel) -> None:
        self._pool.release(kernel)

    def close(self) -> None:
        self._pool.close()

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
        if _default_pool is None or _default_pool.closed:
            size = int(os.environ.get("OMNIENV_JUPYTER_POOL_SIZE", "2"))
            _default_pool = KernelPool(size)
            atexit.register(_default_pool.close)
        return _default_pool
