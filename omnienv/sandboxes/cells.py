"""What a code sandbox returns for one cell, and the one interface every code backend offers.

Every output is bounded here, at the source: a cell that prints a gigabyte or draws a hundred
figures costs the agent a few kilobytes of context, never the server its memory.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["BoundedText", "CellError", "CellOutput", "CodeSandbox", "OutputLimits", "strip_ansi"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """Drop terminal colour codes (IPython colours its tracebacks)."""
    return _ANSI.sub("", text)


@dataclass(frozen=True, slots=True)
class OutputLimits:
    stream_chars: int = 8_000
    result_chars: int = 4_000
    traceback_chars: int = 3_000
    images: int = 4
    image_bytes: int = 2_000_000


class BoundedText:
    """Keeps the first ``limit`` characters and a short tail, and counts what it drops."""

    def __init__(self, limit: int, tail: int = 1_000) -> None:
        self.limit = limit
        self.head: list[str] = []
        self.head_len = 0
        self.tail: deque[str] = deque()
        self.tail_len = 0
        self.tail_limit = tail
        self.dropped = 0

    def add(self, text: str) -> None:
        if self.head_len < self.limit:
            take = text[: self.limit - self.head_len]
            self.head.append(take)
            self.head_len += len(take)
            text = text[len(take) :]
        if not text:
            return
        self.tail.append(text)
        self.tail_len += len(text)
        while self.tail_len - len(self.tail[0]) >= self.tail_limit:
            self.dropped += len(self.tail[0])
            self.tail_len -= len(self.tail.popleft())

    def value(self) -> str:
        tail = "".join(self.tail)
        if len(tail) > self.tail_limit:
            self.dropped += len(tail) - self.tail_limit
            tail = tail[-self.tail_limit :]
            self.tail = deque([tail])
            self.tail_len = len(tail)
        if not self.dropped:
            return "".join(self.head) + tail
        return f"{''.join(self.head)}\n[... {self.dropped} characters omitted ...]\n{tail}"


@dataclass(frozen=True, slots=True)
class CellError:
    name: str
    value: str
    traceback: str

    def __str__(self) -> str:
        return self.traceback or f"{self.name}: {self.value}"


@dataclass(slots=True)
class CellOutput:
    """One cell's (or shell command's) outputs, already bounded.

    ``notes`` carries what the sandbox itself did to the cell (interrupted at its time limit,
    kernel restarted, images dropped); the agent should read them.
    """

    stdout: str = ""
    stderr: str = ""
    results: list[str] = field(default_factory=list)
    images: list[bytes] = field(default_factory=list)
    error: CellError | None = None
    execution_count: int | None = None
    notes: list[str] = field(default_factory=list)
    timed_out: bool = False
    restarted: bool = False

    @property
    def success(self) -> bool:
        return self.error is None and not self.timed_out and not self.restarted


class CodeSandbox(Protocol):
    """A persistent Python kernel in an isolated machine, plus a shell and a work directory."""

    work_dir: str
    """The work directory as the code sees it; relative paths in ``write_file`` land there."""

    async def run_code(self, code: str, timeout: float) -> CellOutput:
        """Run one cell; past ``timeout`` seconds it is interrupted (and reported in ``notes``)."""
        ...

    async def run_shell(self, command: str, timeout: float) -> CellOutput:
        """Run one shell command in the work directory."""
        ...

    async def write_file(self, path: str, data: bytes) -> None:
        """Create a file in the work directory (task data, before the agent starts)."""
        ...

    async def close(self) -> None:
        """Stop the kernel and everything it started; safe to call more than once."""
        ...
