"""Jupyter: solve data-analysis, numeric and algorithmic tasks in a sandboxed Python notebook.

A complete omnienv environment in one file. Read it top to bottom:

1. the prompt and how a cell's output is shown to the agent (stdout, stderr, results, errors with
   short tracebacks, images as image blocks; every part bounded);
2. the notebook record behind ``get_notebook_state``;
3. the rubric: a correct answer scores 1, plus up to 0.1 for using few tool calls;
4. ``Jupyter``: ``setup`` takes a fresh kernel from the warm pool and writes the task's files,
   five ``@tool`` methods are the agent's actions.

The kernel runs locally in a sandbox (``omnienv.sandboxes.jupyter``): no network, a read-only
system with only the kernel's packages (never omnienv's code or these tasks), a size-capped work
directory, memory/CPU/process limits for the whole sandbox, and a per-cell time limit; nothing a
cell starts outlives the cell. Set ``OMNIENV_CODE_SANDBOX=e2b`` (with ``E2B_API_KEY``) to run it
in E2B's cloud instead. A kernel that dies of the agent's own code (it killed or crashed itself,
used up its memory or time, sent too much output) ends the episode, scored by the rubric (0
without an answer: ``info["ended_by_agent"]`` says why); only a kernel the host lost or could not
start is an infrastructure failure, flagged and never scored.
Tasks and their answers live in :mod:`.tasks`; answers are checked by value in :mod:`.answers`.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any

from omnienv.core import (
    AsyncEnvironment,
    Block,
    ImageBlock,
    Rubric,
    Task,
    TextBlock,
    ToolError,
    ToolResult,
    tool,
)
from omnienv.envs.jupyter.answers import answers_match
from omnienv.envs.jupyter.tasks import build, jupyter_tasks
from omnienv.sandboxes.cells import CellOutput, CodeSandbox

__all__ = ["Jupyter", "NotebookCell"]

CELL_TIMEOUT = 30.0
PROMPT = """Solve this task with the Jupyter notebook tools: a persistent Python kernel \
(add_and_execute_code_cell, edit_and_execute_current_cell), a shell (execute_shell_command) \
and get_notebook_state. The working directory is {work_dir}; there is no network access; \
each cell may run for at most {timeout:g} seconds.

{question}
{files}
When you know the answer, call final_answer with the value alone (no words around it)."""


# -- 1. showing a cell's output ----------------------------------------------------------------


def format_output(output: CellOutput) -> list[Block]:
    """The agent's view of a cell: every part labelled, nothing dropped silently."""
    parts: list[str] = []
    if output.stdout.strip():
        parts.append(output.stdout.rstrip())
    if output.stderr.strip():
        parts.append("[stderr]\n" + output.stderr.rstrip())
    for result in output.results:
        prefix = f"Out[{output.execution_count}]: " if output.execution_count else ""
        parts.append(prefix + result)
    if output.error is not None and not (output.timed_out or output.restarted):  # notes explain those
        parts.append(f"ERROR: {output.error.name}: {output.error.value}\n{output.error.traceback}".rstrip())
    parts.extend(f"[note] {note}" for note in output.notes)
    if output.images:
        parts.append(f"[{len(output.images)} image(s)]")
    blocks: list[Block] = [TextBlock("\n".join(parts) if parts else "(no output)")]
    blocks.extend(ImageBlock(image) for image in output.images)
    return blocks


# -- 2. the notebook ---------------------------------------------------------------------------


@dataclass(slots=True)
class NotebookCell:
    kind: str  # "code" or "shell"
    code: str
    output: str
    error: str
    images: list[bytes] = field(default_factory=list)

    @classmethod
    def of(cls, kind: str, code: str, output: CellOutput) -> NotebookCell:
        text = "\n".join(p for p in (output.stdout.strip(), *output.results, *output.notes) if p)
        error = f"{output.error.name}: {output.error.value}" if output.error else ""
        return cls(kind, code, text, error, list(output.images))

    def summary(self, number: int) -> list[str]:
        code = self.code[:120].replace("\n", " ↵ ")
        lines = [f"[Cell {number}] {code}"]
        if self.output:
            lines.append(f"  → {self.output[:300]}")
        if self.error:
            lines.append(f"  ✗ {self.error[:300]}")
        if self.images:
            lines.append(f"  🖼 {len(self.images)} image(s) generated")
        return lines


# -- 3. the rubric -----------------------------------------------------------------------------


def correct(env: Jupyter) -> float:
    """1 when the submitted answer equals the task's answer by value, else 0."""
    task = env.task
    if env.submitted is None or task is None:
        return 0.0
    return float(answers_match(env.submitted, task.answer, float(task.data.get("tolerance", 0.0))))


def efficiency(env: Jupyter) -> float:
    """For a correct answer, 1 with the fewest calls (one cell and the answer), less with more."""
    if not correct(env):
        return 0.0
    spare = max(1, (env.max_turns or 20) - 2)
    return max(0.0, 1.0 - (env.calls - 2) / spare)


# -- 4. the environment ------------------------------------------------------------------------


class Jupyter(AsyncEnvironment):
    """Solve data-analysis, numeric and algorithmic tasks with a sandboxed Python notebook."""

    name = "jupyter"
    splits = ("train", "test")
    max_turns = 20
    rubric = Rubric(correct, efficiency, weights=[1.0, 0.1])

    sandbox: CodeSandbox | None = None

    def __init__(self, *, backend: str | None = None, pool: Any = None, cell_timeout: float = CELL_TIMEOUT) -> None:
        self.backend = backend
        self.pool = pool
        self.cell_timeout = cell_timeout
        self.cells: list[NotebookCell] = []
        self.submitted: str | None = None
        self.calls = 0

    @classmethod
    def tasks(cls, split: str) -> tuple[Task, ...]:
        return jupyter_tasks(split)

    @classmethod
    def preflight(cls) -> None:
        """A served Jupyter refuses to start where kernels cannot be sandboxed, and says what it cannot limit."""
        if os.environ.get("OMNIENV_CODE_SANDBOX", "local") == "local":
            from omnienv.sandboxes.sandbox import preflight

            preflight()

    async def setup(self, task: Task | None, rng: random.Random) -> str:
        from omnienv.sandboxes.jupyter import open_code_sandbox

        await self.teardown()
        task = task or rng.choice(jupyter_tasks("train"))
        built = build(task.data["family"], task.data["variant"])
        self.cells, self.submitted, self.calls = [], None, 0
        self.sandbox = await open_code_sandbox(self.backend, pool=self.pool)
        for name, data in built.files.items():
            await self.sandbox.write_file(name, data)
        files = f"\nFiles in the working directory: {', '.join(sorted(built.files))}\n" if built.files else ""
        return PROMPT.format(
            work_dir=self.sandbox.work_dir, timeout=self.cell_timeout, question=built.question, files=files
        )

    async def teardown(self) -> None:
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            await sandbox.close()

    def _sandbox(self) -> CodeSandbox:
        self.calls += 1
        if self.sandbox is None:  # pragma: no cover - the base class refuses steps before reset
            raise ToolError("no kernel: the episode has not started")
        return self.sandbox

    async def _run(self, code: str) -> CellOutput:
        if not code.strip():
            raise ToolError("the code is empty: pass the Python source to run as 'code'")
        return await self._sandbox().run_code(code, self.cell_timeout)

    @tool
    async def add_and_execute_code_cell(self, code: str) -> list[Block]:
        """Add a new code cell to the notebook and run it in the persistent Python kernel.

        Args:
            code: Python source for the cell; the value of its last expression is shown.
        """
        output = await self._run(code)
        self.cells.append(NotebookCell.of("code", code, output))
        return format_output(output)

    @tool
    async def edit_and_execute_current_cell(self, code: str) -> list[Block]:
        """Replace the last code cell with new code and run it (the kernel keeps earlier effects).

        Args:
            code: The new Python source for the current cell.
        """
        if not any(cell.kind == "code" for cell in self.cells):
            self.calls += 1
            raise ToolError("there is no code cell to edit yet: use add_and_execute_code_cell first")
        output = await self._run(code)
        index = max(i for i, cell in enumerate(self.cells) if cell.kind == "code")
        self.cells[index] = NotebookCell.of("code", code, output)
        return format_output(output)

    @tool
    async def execute_shell_command(self, command: str) -> list[Block]:
        """Run a shell command (sh) in the working directory; shows stdout, stderr and exit code.

        Args:
            command: The command line, e.g. "ls -la" or "wc -l data.csv".
        """
        if not command.strip():
            self.calls += 1
            raise ToolError("the command is empty: pass a shell command line as 'command'")
        output = await self._sandbox().run_shell(command, self.cell_timeout)
        self.cells.append(NotebookCell.of("shell", f"$ {command}", output))
        return format_output(output)

    @tool
    def get_notebook_state(self, include_images: bool = False) -> list[Block]:
        """Summarise the last 10 cells: code, output, errors and images.

        Args:
            include_images: Also return the images the cells drew.
        """
        self.calls += 1
        if not self.cells:
            return [TextBlock("No cells executed yet.")]
        first = max(0, len(self.cells) - 10)
        lines = [line for i, cell in enumerate(self.cells[first:], first + 1) for line in cell.summary(i)]
        blocks: list[Block] = [TextBlock("\n".join(lines))]
        if include_images:
            images = [image for cell in self.cells[first:] for image in cell.images]
            blocks.extend(ImageBlock(image) for image in images[-4:])
        return blocks

    @tool
    def final_answer(self, answer: str) -> ToolResult:
        """Submit the final answer and end the episode.

        Args:
            answer: The answer's value alone, e.g. "42", "3.1416" or "banana".
        """
        self.calls += 1
        self.submitted = answer
        # The episode ends here, so the verdict may go to the infrastructure (rollout win rates).
        return ToolResult.of(f"Answer submitted: {answer}", done=True, info={"success": bool(correct(self))})

    def state_fields(self) -> dict[str, object]:
        return {
            "cells": len(self.cells),
            "errors": sum(1 for cell in self.cells if cell.error),
            "submitted": self.submitted is not None,
        }
