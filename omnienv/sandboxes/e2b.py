"""E2B's cloud code interpreter behind the same :class:`~omnienv.sandboxes.cells.CodeSandbox` face.

Optional: needs ``pip install e2b-code-interpreter`` and ``E2B_API_KEY``, and is used only when
asked for (``OMNIENV_CODE_SANDBOX=e2b``). Outputs are bounded exactly like the local kernels'.
SDK errors become :class:`E2BError`, an infrastructure failure, so such episodes are masked.
"""

from __future__ import annotations

import base64
import os
import shlex
from typing import Any

from omnienv.core import EnvironmentFailure
from omnienv.sandboxes.cells import BoundedText, CellError, CellOutput, OutputLimits, strip_ansi

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
        return text.value()

    async def run_code(self, code: str, timeout: float = 30.0) -> CellOutput:
        try:
            execution = await self._sandbox.run_code(code, timeout=timeout)
        except TimeoutError:
            note = f"The cell ran past its {timeout:g} s time limit and was stopped."
            return CellOutput(error=CellError("TimeoutError", note, ""), notes=[note], timed_out=True)
        except Exception as exc:
            raise E2BError(f"E2B run_code failed: {exc}") from exc
        output = CellOutput(
            self._text(execution.logs.stdout),
            self._text(execution.logs.stderr),
            execution_count=execution.execution_count,
        )
        for result in execution.results:
            if getattr(result, "png", None) and len(output.images) < self.limits.images:
                output.images.append(base64.b64decode(result.png))
            elif getattr(result, "text", None):
                output.results.append(result.text[: self.limits.result_chars])
        if execution.error is not None:
            traceback = strip_ansi(execution.error.traceback or "")[-self.limits.traceback_chars :]
            output.error = CellError(execution.error.name, execution.error.value, traceback)
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
