"""Wordle whose infrastructure breaks on some tasks: the masking check for TRL training."""

from __future__ import annotations

from omnienv.core import ToolResult
from omnienv.envs.wordle import Wordle


class FlakyWordle(Wordle):
    """Every guess crashes on tasks whose number is a multiple of 4, as a dead sandbox would."""

    def guess(self, word: str) -> ToolResult:
        task = self.task
        if task is not None and int(task.id.rsplit("/", 1)[1]) % 4 == 0:
            raise RuntimeError("the sandbox died")
        return super().guess(word)
