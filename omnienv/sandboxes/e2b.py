"""E2B's cloud code interpreter behind the same :class:`~omnienv.sandboxes.cells.CodeSandbox` face.

Optional: needs ``pip install e2b-code-interpreter`` and ``E2B_API_KEY``, and is used only when
asked for (``OMNIENV_CODE_SANDBOX=e2b``). Outputs are read by the local kernels' own collector
(:mod:`omnienv.sandboxes.jupyter.collector`): bounded, lone surrogates replaced, images kept only
when they decode as PNGs, so an agent's output voids no episode on either backend.
SDK errors become :class:`E2BError`, an infrastructure failure, so such episodes are masked.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from omnienv.core import EnvironmentFailure
from omnienv.core.text import valid_text
from omnienv.core.threads import to_blocking_thread
from omnienv.sandboxes.cells import BoundedText, CellError, CellOutput, OutputLimits
from omnienv.sandboxes.jupyter.collector import OutputCollector

__all__ = ["E2BError", "E2BSandbox"]


class E2BError(EnvironmentFailure):
    """E2B is unavailable, unconfigured, or its sandbox broke."""

    code = "E2B_FAILURE"


class E2BSandbox:
    """One E2B sandbox (one persistent kernel), killed by ``close``."""

    work_dir = "/home/user"

    def __init__(self, sandbox: Any, limits: OutputLimits | None = None) -> None:
        self._sandbox = sandbox
        self.limits = limits or OutputLimits()
        self._closed = False

    @classmethod
    async def open(cls, limits: OutputLimits | None = None) -> E2BSandbox:
        key = os.environ.get("E2B_API_KEY")
        if not key:
            raise E2BError("E2B_API_KEY is not set: export it, or use the local backend")
        try:
            from e2b_code_interpreter import AsyncSandbox
        except ImportError as exc:
            raise E2BError("the E2B backend needs 'pip install e2b-code-interpreter'") from exc
        try:
            return cls(await AsyncSandbox.create(api_key=key), limits)
        except Exception as exc:
            raise E2BError(f"cannot create an E2B sandbox: {exc}") from exc

    def _text(self, parts: list[str]) -> str:
        text = BoundedText(self.limits.stream_chars)
        for part in parts:
            text.add(part)
        return valid_text(text.value())

    async def run_code(self, code: str, timeout: float = 30.0) -> CellOutput:
        try:
            execution = await self._sandbox.run_code(code, timeout=timeout)
        except TimeoutError:
            note = f"The cell ran past its {timeout:g} s time limit and was stopped."
            return CellOutput(error=CellError("TimeoutError", note, ""), notes=[note], timed_out=True)
        except Exception as exc:
            raise E2BError(f"E2B run_code failed: {exc}") from exc
        collect = OutputCollector(self.limits)  # E2B's kernel is the agent's too: its output is read as a local one's
        for name, parts in (("stdout", execution.logs.stdout), ("stderr", execution.logs.stderr)):
            for part in parts:
                collect.add({"msg_type": "stream", "content": {"name": name, "text": part}})
        for result in execution.results:
            data = {"image/png": getattr(result, "png", None), "text/plain": getattr(result, "text", None)}
            collect.add({"msg_type": "display_data", "content": {"data": {k: v for k, v in data.items() if v}}})
        error = execution.error
        if error is not None:
            content = {"ename": error.name, "evalue": error.value, "traceback": [error.traceback or ""]}
            collect.add({"msg_type": "error", "content": content})
        output = await to_blocking_thread(collect.output)  # it decodes the images
        count = execution.execution_count
        output.execution_count = count if isinstance(count, int) else None
        return output

    async def run_shell(self, command: str, timeout: float = 30.0) -> CellOutput:
        try:
            result = await self._sandbox.commands.run(f"cd {shlex.quote(self.work_dir)} && {command}", timeout=timeout)
        except Exception as exc:  # CommandExitException carries the output of a failed command
            if not hasattr(exc, "exit_code"):
                raise E2BError(f"E2B command failed: {exc}") from exc
            result = exc
        stderr = self._text([result.stderr or ""])
        if result.exit_code:
            stderr += f"[exit code {result.exit_code}]\n"
        return CellOutput(self._text([result.stdout or ""]), stderr)

    async def write_file(self, path: str, data: bytes) -> None:
        if path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"'{path}' is outside the work directory; use a relative path inside it")
        try:
            await self._sandbox.files.write(f"{self.work_dir}/{path}", data)
        except Exception as exc:
            raise E2BError(f"E2B file write failed: {exc}") from exc

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._sandbox.kill()
        except Exception:  # the sandbox times out on E2B's side anyway
            pass
