"""The episode ledger: the one account of an episode's reward, its end and its failure.

The environment keeps one for its own episode, and every party that follows an episode from
outside (each dialect, the rollout loop, ``omnienv play``) keeps one too and feeds it the results
it sees. None of them adds rewards up or decides when an episode is over on its own, so "over",
"scored" and the total cannot drift apart between the places an episode is watched from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar

from omnienv.core.tasks import Task
from omnienv.core.types import Ending, Failure, StepResult, episode_over

__all__ = ["EpisodeLedger", "Outcome"]


class Outcome(Ending, Protocol):
    """What one step (or one text turn of several calls) came to."""

    @property
    def reward(self) -> float: ...


OutcomeT = TypeVar("OutcomeT", bound=Outcome)


@dataclass(slots=True)
class EpisodeLedger:
    """Reward total, turn count and end of one episode.

    ``done``: ended by the environment's own rules. ``truncated``: cut short by a turn limit or
    by the trainer (:meth:`~omnienv.core.Environment.end`). ``failure``: the infrastructure
    broke, so the episode is void: its reward means nothing and trainers mask it.
    """

    task: Task | None = None
    seed: int | None = None
    id: str | None = None
    steps: int = 0
    reward: float = 0.0
    done: bool = False
    truncated: bool = False
    failure: Failure | None = None

    @property
    def over(self) -> bool:
        """No further step may run: the episode ended, was cut short, or failed."""
        return episode_over(self)

    @property
    def final_reward(self) -> float | None:
        """The reward to train on, or None while the episode runs or when it failed (mask it)."""
        return self.reward if self.over and self.failure is None else None

    def record(self, result: OutcomeT, *, step: bool = True) -> OutcomeT:
        """Account for one step's result (its reward, end and failure); returns it unchanged.

        ``step=False`` for an outcome that is no step of the agent's (the trainer's cut).
        """
        self.steps += step
        self.reward += result.reward
        if result.done:
            self.done = True
        if result.truncated:
            self.truncated = True
        if result.failure is not None:
            self.fail(result.failure)
        return result

    def add_final(self, result: StepResult, reward: float, parts: dict[str, float] | None = None) -> StepResult:
        """Add the final score (the rubric's) to the episode and to its last result, whose info gets
        the score's ``parts`` as "rubric" (in a new dict: the one the tool returned may be shared)."""
        if parts is not None:
            result.info = {**result.info, "rubric": parts}
        result.reward += reward
        self.reward += reward
        return result

    def fail(self, failure: Failure) -> None:
        """Void the episode; the first failure is the one reported."""
        if self.failure is None:
            self.failure = failure
