"""A scripted Wordle player that reads only what an agent reads: the marks in observations.

It keeps the answers consistent with every mark so far and guesses the word that splits them
into the most groups by their marks (from the remaining candidates while there are many, from
all answers once few are left), which wins every game of the shipped word lists within six.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

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
    return _next_guess(tuple(history))


# Remembered: games that share an opener share their first marks, so their questions repeat.
@lru_cache(maxsize=8192)
def _next_guess(history: tuple[tuple[str, str], ...]) -> str:
    if not history:
        return OPENER
    candidates = _candidates(history)
    if len(candidates) <= 2:
        return candidates[0] if candidates else OPENER
    if len(candidates) > WIDE_SEARCH_BELOW:
        return max(candidates, key=lambda guess: _split_quality(guess, candidates))
    # The first word of the wide search that tells every candidate apart is the one ``max`` would
    # pick (a candidate if any does that, as that ranks higher): the search stops there.
    best = (0, False, 0)
    for pool, ceiling in ((candidates, (len(candidates), True, -1)), (_all_answers(), (len(candidates), False, -1))):
        for guess in pool:
            quality = _split_quality(guess, candidates)
            if quality >= ceiling:
                return guess
            if quality > best:
                best, chosen = quality, guess
    return chosen


@lru_cache(maxsize=8192)
def _candidates(history: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The answers consistent with every mark, narrowed from those of the history before the last."""
    earlier = _candidates(history[:-1]) if len(history) > 1 else _all_answers()
    guess, marks = history[-1]
    return tuple(word for word in earlier if score_guess(guess, word) == marks)


def _split_quality(guess: str, candidates: tuple[str, ...]) -> tuple[int, bool, int]:
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
