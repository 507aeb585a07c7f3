"""Policies choose the next tool call from the episode so far.

One async interface for all of them: a scripted policy answers at once, a model-backed one
awaits its API, and the episode loop never has to ask which kind it holds.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Protocol

from omnienv.core import ToolCall, ToolSpec
from omnienv.core.sampling import sample_arguments
from omnienv.rollout.trajectory import Episode

__all__ = ["EndEpisode", "Policy", "RandomPolicy"]


class EndEpisode(Exception):
    """Raised by a policy that stops acting (a model answering without a tool call).

    The episode ends as ``stopped``: scored as it stands, since stopping is the agent's choice.
    """


class Policy(Protocol):
    name: str

    async def act(self, episode: Episode) -> ToolCall:
        """The next call, given the prompt and every step so far."""
        ...


class RandomPolicy:
    """A baseline: a random tool with random arguments that fit its schema.

    ``strings`` draws text arguments from a vocabulary (Wordle's word list), so the baseline
    plays the game instead of only tripping validation.
    """

    name = "random"

    def __init__(
        self, tools: Mapping[str, ToolSpec], seed: int | None = None, strings: Sequence[str] | None = None
    ) -> None:
        self.tools = list(tools.values())
        self.rng = random.Random(seed)
        self.strings = strings

    async def act(self, episode: Episode) -> ToolCall:
        spec = self.rng.choice(self.tools)
        return ToolCall(spec.name, sample_arguments(spec.parameters, self.rng, self.strings))
