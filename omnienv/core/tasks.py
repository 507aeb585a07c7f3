"""Tasks: what one episode is about, grouped in named splits (``train``, ``test``...).

A task's ``data`` is for the environment only; ``answer`` is what the agent must find, kept
apart so that checkers can prove it never reaches the agent before the episode ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Task"]


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    split: str
    data: dict[str, Any] = field(default_factory=dict)
    answer: Any = None

    def to_dict(self, *, include_answer: bool = False) -> dict[str, Any]:
        """The infrastructure's view; the answer is left out unless asked for."""
        out: dict[str, Any] = {"id": self.id, "split": self.split, "data": self.data}
        if include_answer:
            out["answer"] = self.answer
        return out
