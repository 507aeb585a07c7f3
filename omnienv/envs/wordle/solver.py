"""A scripted Wordle player that reads only what an agent reads: the marks in observations.

It keeps the answers consistent with every mark so far and guesses the word that splits them
into the most groups by their marks (from the remaining candidates while there are many, from
all answers once few are left), which wins every game of the shipped word lists within six.
"""

from __future__ import annotations

import re
from functools import cache

from omnienv.core import ToolCall
from omnienv.envs.wordle import answers, score_guess
from omnienv.rollout.trajectory import Episode

__all__ = ["WordleSolver", "next_guess", "read_marks"]

OPENER = "slate"
WIDE_SEARCH_BELOW = 40
_MARKS = re.compile(r"^([A-Za-z]{5}) ([🟩🟨⬛]{5})")


@cache
def _all_answers() -> tuple[str, ...]:
    return tuple(sorted(set(answers("train")) | set(answers("test"))))


def read_marks(observation_text: str) -> tuple[str, str] | None:
    """``("crane", "🟩⬛⬛🟨⬛")`` from a guess observation, or None for any other text."""
    match = _MARKS.match(observation_text)
    return (match.group(1).lower(), match.group(2)) if match else None


def next_guess(history: list[tuple[str, str]]) -> str:
    """The solver's next word after ``history``, a list of (guess, marks)."""
    if not history:
        return OPENER
    candidates = [w for w in _all_answers() if all(score_guess(g, w) == m for g, m in history)]
    if len(candidates) <= 2:
        return candidates[0] if candidates else OPENER
    pool = candidates if len(candidates) > WIDE_SEARCH_BELOW else _all_answers()
    return max(pool, key=lambda guess: _split_quality(guess, candidates))


def _split_quality(guess: str, candidates: list[str]) -> tuple[int, bool, int]:
    groups: dict[str, int] = {}
    for answer in candidates:
        marks = score_guess(guess, answer)
        groups[marks] = groups.get(marks, 0) + 1
    return len(groups), guess in candidates, -max(groups.values())


class WordleSolver:
    name = "solver"

    async def act(self, episode: Episode) -> ToolCall:
        history = [marks for step in episode.steps if (marks := read_marks(step.result.observation.text))]
        return ToolCall("guess", {"word": next_guess(history)})
