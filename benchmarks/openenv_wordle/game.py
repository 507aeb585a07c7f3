"""Wordle's rules, restated without omnienv so that OpenEnv's virtualenv can run them.

Same word lists (read by path from omnienv/envs/wordle/words/), same task order (answers sorted by
the SHA-256 of the word, ids ``split/NNNN``), same seeded choice for ``reset(seed=)`` without a task
(SplitMix64 of the seed, as ``omnienv.core.tasks.seed_index``; seeds here are JSON's non-negative ints),
same marks and the same reward, so both servers play identical games.
"""

from __future__ import annotations

import hashlib
import random
from functools import cache
from pathlib import Path

__all__ = ["MAX_ATTEMPTS", "PROMPT", "WordleGame", "answer_for", "score_guess"]

WORDS = Path(__file__).resolve().parents[2] / "omnienv" / "envs" / "wordle" / "words"
MAX_ATTEMPTS = 6
GREEN, YELLOW, GREY = "🟩", "🟨", "⬛"
PROMPT = (
    "Let's play Wordle. Find the hidden five-letter English word in 6 guesses.\n"
    "Call the `guess` tool with a word. Each guess is marked letter by letter:\n"
    "  🟩 right letter, right place\n"
    "  🟨 the letter is in the word, in another place\n"
    "  ⬛ the letter is not in the word (or not that many times)\n"
    "Guesses must be real English words; an invalid guess does not use an attempt."
)


@cache
def vocabulary() -> frozenset[str]:
    return frozenset((WORDS / "guesses.txt").read_text().split())


@cache
def answers(split: str) -> tuple[str, ...]:
    words = (WORDS / f"{split}.txt").read_text().split()
    return tuple(sorted(words, key=lambda w: hashlib.sha256(w.encode()).digest()))


def answer_for(task_id: str | None, seed: int | None) -> str:
    """The hidden word: the task's when a task id is given, else a seeded pick from ``train``."""
    if task_id:
        split, _, index = task_id.partition("/")
        if split not in ("train", "test") or not index.isdigit() or int(index) >= len(answers(split)):
            raise ValueError(f"unknown task id {task_id!r}; expected e.g. 'test/0003'")
        return answers(split)[int(index)]
    pool = answers("train")
    return random.choice(pool) if seed is None else pool[_splitmix64(seed) % len(pool)]


def _splitmix64(seed: int) -> int:
    mask = (1 << 64) - 1
    x = (seed + 0x9E3779B97F4A7C15) & mask
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
    return x ^ (x >> 31)


def score_guess(guess: str, answer: str) -> str:
    marks = [GREY] * 5
    left: dict[str, int] = {}
    for i, (g, a) in enumerate(zip(guess, answer, strict=True)):
        if g == a:
            marks[i] = GREEN
        else:
            left[a] = left.get(a, 0) + 1
    for i, g in enumerate(guess):
        if marks[i] is GREY and left.get(g):
            marks[i] = YELLOW
            left[g] -= 1
    return "".join(marks)


class WordleGame:
    """One game; ``guess`` returns (text, reward, done) and raises ValueError for a free miss."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.guesses: list[str] = []
        self.marks: list[str] = []

    @property
    def won(self) -> bool:
        return bool(self.guesses) and self.guesses[-1] == self.answer

    def guess(self, word: str) -> tuple[str, float, bool]:
        word = word.strip().lower()
        if len(word) != 5 or not word.isalpha():
            raise ValueError(f"'{word}' is not a five-letter word; this guess did not use an attempt.")
        if word not in vocabulary():
            raise ValueError(f"'{word}' is not in the word list; this guess did not use an attempt.")
        marks = score_guess(word, self.answer)
        self.guesses.append(word)
        self.marks.append(marks)
        line = f"{word.upper()} {marks}"
        if self.won:
            reward = 1.0 + 0.5 * (1 - len(self.guesses) / MAX_ATTEMPTS)
            return f"{line} — Correct! Solved in {len(self.guesses)} guesses.", reward, True
        if len(self.guesses) >= MAX_ATTEMPTS:
            reward = 0.1 * max(m.count(GREEN) for m in self.marks)
            return f"{line} — Out of guesses. The word was '{self.answer}'.", reward, True
        left = MAX_ATTEMPTS - len(self.guesses)
        return f"{line} — {left} guess{'es' if left > 1 else ''} left.", 0.0, False

    def history(self) -> str:
        pairs = zip(self.guesses, self.marks, strict=True)
        lines = [f"{i}. {g.upper()} {m}" for i, (g, m) in enumerate(pairs, 1)]
        lines.append(f"Guesses used: {len(self.guesses)}/{MAX_ATTEMPTS}")
        return "\n".join(lines)
