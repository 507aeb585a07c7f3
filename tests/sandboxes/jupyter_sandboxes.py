"""What the Jupyter sandbox tests share: running code in a sandbox of the ``pool`` fixture's
(``conftest.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from omnienv.sandboxes.jupyter import JupyterSandbox, KernelPool

ROOT = Path(__file__).resolve().parents[2]


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def open_sandbox(pool: KernelPool, **kwargs: object) -> JupyterSandbox:
    return await JupyterSandbox.open(pool, **kwargs)  # type: ignore[arg-type]


def sandbox_run(pool: KernelPool, code: str, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        sandbox = await open_sandbox(pool)
        try:
            return await sandbox.run_code(code, timeout)
        finally:
            await sandbox.close()

    return run(go())
