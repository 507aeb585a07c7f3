"""Each matrix cell's episode played on the bare environment: what every framework must report."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from omnienv.core import as_sync
from tests.matrix.cells import CELLS, Player


@dataclass(frozen=True)
class Reference:
    rewards: tuple[float, ...]
    """Per call, the final one carrying the rubric's score."""
    done: bool
    prompt: str

    @property
    def total(self) -> float:
        return sum(self.rewards)


@cache
def reference(env: str) -> Reference:
    cell = CELLS[env]
    instance = as_sync(cell.env_class())
    try:
        prompt = instance.reset(cell.task_id, 0).text
        player = Player(cell, prompt)
        rewards: list[float] = []
        while True:
            call = player.act()
            result = instance.step(call)
            rewards.append(result.reward)
            player.saw(call, result.observation.text)
            if result.over:
                assert result.failure is None, f"{env}'s reference episode failed: {result.failure}"
                return Reference(tuple(rewards), result.done, prompt)
    finally:
        instance.close()
