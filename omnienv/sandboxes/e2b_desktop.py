"""An E2B Desktop sandbox behind the same interface as a local Xvfb display (optional).

E2B's desktop image ships xdotool, so every action of :class:`DesktopSession` runs unchanged as a
remote command line; only running commands, files and screenshots go through the E2B SDK. The
SDK is imported on first use: ``pip install e2b-desktop`` and set ``E2B_API_KEY``.
"""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Sequence
from typing import Any

from omnienv.sandboxes.desktop import CommandResult, DesktopSession, DisplayError

__all__ = ["E2BDesktop"]

HOME = "/home/user"


class E2BDesktop(DesktopSession):
    def __init__(self, sandbox: Any, width: int, height: int) -> None:
        self.sandbox = sandbox
        self.width, self.height = width, height
        self._closed = False

    @classmethod
    def create(cls, width: int = 1024, height: int = 768, timeout: int = 600,
               api_key: str | None = None) -> E2BDesktop:
        """Start a sandbox (blocking, seconds); raises DisplayError naming what is missing."""
        try:
            from e2b_desktop import Sandbox
        except ImportError as exc:
            raise DisplayError("the E2B backend needs the SDK: pip install e2b-desktop") from exc
        key = api_key or os.environ.get("E2B_API_KEY")
        if not key:
            raise DisplayError("the E2B backend needs an API key: set E2B_API_KEY")
        try:
            sandbox = Sandbox.create(resolution=(width, height), dpi=96, timeout=timeout, api_key=key)
        except Exception as exc:
            raise DisplayError(f"E2B sandbox did not start: {exc}") from exc
        return cls(sandbox, width, height)

    async def exec(self, argv: Sequence[str], timeout: float = 10.0) -> CommandResult:
        return await self.shell(shlex.join(argv), timeout)

    async def shell(self, command: str, timeout: float = 60.0) -> CommandResult:
        self.require_alive()
        try:
            result = await asyncio.to_thread(self.sandbox.commands.run, command, timeout=timeout,
                                             cwd=HOME)
        except Exception as exc:
            code = getattr(exc, "exit_code", None)
            if code is None:  # not a command's own failure: the sandbox or the network broke
                raise DisplayError(f"E2B command failed: {exc}") from exc
            return CommandResult(int(code), getattr(exc, "stdout", ""), getattr(exc, "stderr", ""))
        return CommandResult(result.exit_code, result.stdout, result.stderr)

    async def screenshot(self) -> bytes:
        self.require_alive()
        try:
            return bytes(await asyncio.to_thread(self.sandbox.screenshot))
        except Exception as exc:
            raise DisplayError(f"E2B screenshot failed: {exc}") from exc

    async def read_file(self, path: str) -> bytes | None:
        try:
            data = await asyncio.to_thread(self.sandbox.files.read, f"{HOME}/{path}", format="bytes")
        except Exception:
            return None
        return bytes(data)

    async def write_file(self, path: str, data: bytes) -> None:
        await asyncio.to_thread(self.sandbox.files.write, f"{HOME}/{path}", data)

    async def launch(self, command: str) -> None:
        await asyncio.to_thread(self.sandbox.commands.run, command, background=True, cwd=HOME)

    def alive(self) -> bool:
        return not self._closed

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await asyncio.to_thread(self.sandbox.kill)
