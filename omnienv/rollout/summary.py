"""Aggregate episodes into the numbers people compare runs by.

Failed episodes are counted apart and never averaged in: a crashed sandbox is not a reward of 0.
``failure_kinds`` says what failed them (``session_lost``, ``worker_lost``, ``step_timeout``...).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from omnienv.rollout.trajectory import Episode

__all__ = ["Summary", "summarize"]


@dataclass(frozen=True, slots=True)
class Summary:
    episodes: int
    scored: int
    failures: int
    mean_reward: float
    reward_ci95: float
    success_rate: float | None
    mean_turns: float
    truncated: int
    stopped: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failure_kinds: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(episodes: Iterable[Episode]) -> Summary:
    everything = list(episodes)
    scored = [e for e in everything if e.failure is None]
    rewards = [e.reward for e in scored]
    mean = sum(rewards) / len(rewards) if rewards else math.nan
    if len(rewards) > 1:
        variance = sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)
        ci95 = 1.96 * math.sqrt(variance / len(rewards))
    else:
        ci95 = math.nan
    verdicts = [e.success for e in scored]
    judged = any(v is not None for v in verdicts)
    success_rate = sum(v is True for v in verdicts) / len(scored) if judged else None
    return Summary(
        episodes=len(everything),
        scored=len(scored),
        failures=len(everything) - len(scored),
        mean_reward=mean,
        reward_ci95=ci95,
        success_rate=success_rate,
        mean_turns=sum(len(e.steps) for e in scored) / len(scored) if scored else math.nan,
        truncated=sum(e.truncated for e in scored),
        stopped=sum(e.stopped is not None for e in scored),
        prompt_tokens=sum(e.usage.get("prompt_tokens", 0) for e in everything),
        completion_tokens=sum(e.usage.get("completion_tokens", 0) for e in everything),
        failure_kinds=dict(Counter(e.failure.kind for e in everything if e.failure is not None).most_common()),
    )
