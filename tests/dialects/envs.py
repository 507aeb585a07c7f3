"""Small environments for dialect tests: one that counts, crashes on demand, and has a rubric."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import ClassVar

from omnienv.core import AsyncEnvironment, Environment, ImageBlock, Rubric, Task, ToolResult, tool


def reached(env: Counter | AsyncCounter) -> float:
    """1 when the total reached the target."""
    return 1.0 if env.total >= env.target else 0.0


class Counter(Environment):
    """Add numbers until the total reaches 3."""

    max_turns = 4
    rubric = Rubric(reached)
    text_actions: ClassVar[Mapping[str, str | None]] = {"add": "n", "peek": None}
    target = 3

    def setup(self, task: Task | None, rng: random.Random) -> str:
        self.total = 0
        return f"Reach {self.target}. Seed draw: {rng.randint(0, 999)}."

    @tool
    def add(self, n: int) -> ToolResult:
        """Add a number to the total.

        Args:
            n: The amount to add; a negative amount crashes the environment.
        """
        if n < 0:
            raise RuntimeError("the counter broke")
        self.total += n
        return ToolResult.of(f"total {self.total}", reward=0.25, done=self.total >= self.target)

    @tool
    def peek(self) -> str:
        """Show the total."""
        return f"total {self.total}"


class AsyncCounter(AsyncEnvironment):
    """The same game, written with coroutines."""

    max_turns = 4
    rubric = Rubric(reached)
    target = 3

    async def setup(self, task: Task | None, rng: random.Random) -> str:
        self.total = 0
        return "Reach 3."

    @tool
    async def add(self, n: int) -> ToolResult:
        """Add a number to the total.

        Args:
            n: The amount to add.
        """
        self.total += n
        return ToolResult.of(f"total {self.total}", done=self.total >= self.target)


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201d2b7d5f50000000049454e44ae426082"
)
"""A 1x1 PNG: what a screenshot tool returns, small enough to compare byte for byte."""


class Snapshot(Environment):
    """A tool that answers with an image, as a desktop's screenshot does."""

    max_turns = 3

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "Look at the screen."

    @tool
    def look(self) -> ToolResult:
        """Take a screenshot."""
        return ToolResult.of([ImageBlock(PNG), "a 1x1 screen"])
