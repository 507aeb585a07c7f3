"""Wordle: guess the hidden five-letter word in six attempts.

A complete omnienv environment in one file. Read it top to bottom:

1. the word lists and the tasks (``train`` and ``test`` splits with disjoint answers);
2. ``WordleGame``: the game rules alone, no omnienv in sight;
3. ``Wordle``: the environment: ``setup`` starts a game, two ``@tool`` methods are the agent's
   actions, and a ``Rubric`` turns the finished game into the final reward.

Rules: every guess gets one mark per letter, 🟩 right letter in the right place, 🟨 in the word
elsewhere, ⬛ not in the word (or no copies left: greens are marked first, then yellows left to
right, each using up one copy of the letter). Guesses must be real words; an invalid guess costs
no attempt. Reward: a win scores ``1 + 0.5 * (1 - guesses / 6)``, a loss ``0.1 * best greens``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import ClassVar

from omnienv.core import Environment, Rubric, Task, ToolError, ToolResult, tool

MAX_ATTEMPTS = 6
WORD_LENGTH = 5
GREEN, YELLOW, GREY = "🟩", "🟨", "⬛"
PROMPT = (
    "Let's play Wordle. Find the hidden five-letter English word in 6 guesses.\n"
    "Call the `guess` tool with a word. Each guess is marked letter by letter:\n"
    "  🟩 right letter, right place\n"
    "  🟨 the letter is in the word, in another place\n"
    "  ⬛ the letter is not in the word (or not that many times)\n"
    "Guesses must be real English words; an invalid guess does not use an attempt."
)


# -- 1. words and tasks ------------------------------------------------------------------------


def _read_words(name: str) -> list[str]:
    return (resources.files(__package__) / "words" / name).read_text().split()


@cache
def accepted_words() -> frozenset[str]:
    return frozenset(_read_words("guesses.txt"))


@cache
def answers(split: str) -> tuple[str, ...]:
    """Answers in a stable order that says nothing about the word (sorted by hash)."""
    words = _read_words(f"{split}.txt")
    return tuple(sorted(words, key=lambda w: hashlib.sha256(w.encode()).digest()))


# -- 2. the game rules -------------------------------------------------------------------------


def score_guess(guess: str, answer: str) -> str:
    """The five marks for ``guess``: greens first, then yellows, each using up one letter."""
    marks = [GREY] * WORD_LENGTH
    unmatched: dict[str, int] = {}
    for i in range(WORD_LENGTH):
        if guess[i] == answer[i]:
            marks[i] = GREEN
        else:
            unmatched[answer[i]] = unmatched.get(answer[i], 0) + 1
    for i in range(WORD_LENGTH):
        letter = guess[i]
        if marks[i] is GREY and unmatched.get(letter):
            marks[i] = YELLOW
            unmatched[letter] -= 1
    return "".join(marks)


class WordleGame:
    """One game. ``guess`` raises ValueError for a word that costs no attempt."""

    def __init__(self, answer: str, vocabulary: frozenset[str]) -> None:
        self.answer = answer
        self.vocabulary = vocabulary
        self.guesses: list[str] = []
        self.marks: list[str] = []

    @property
    def won(self) -> bool:
        return bool(self.guesses) and self.guesses[-1] == self.answer

    @property
    def over(self) -> bool:
        return self.won or len(self.guesses) >= MAX_ATTEMPTS

    def guess(self, word: str) -> str:
        word = word.strip().lower()
        if len(word) != WORD_LENGTH or not word.isalpha():
            raise ValueError(f"'{word}' is not a five-letter word")
        if word not in self.vocabulary:
            raise ValueError(f"'{word}' is not in the word list")
        marks = score_guess(word, self.answer)
        self.guesses.append(word)
        self.marks.append(marks)
        return marks


# -- 3. the environment ------------------------------------------------------------------------


def solved(env: Wordle) -> float:
    """Winning scores 1, plus up to 0.5 for using fewer guesses."""
    game = env.game
    return 1.0 + 0.5 * (1 - len(game.guesses) / MAX_ATTEMPTS) if game.won else 0.0


def partial_credit(env: Wordle) -> float:
    """A lost game still earns 0.1 per green letter of its best guess."""
    game = env.game
    return 0.0 if game.won else 0.1 * max((m.count(GREEN) for m in game.marks), default=0)


class Wordle(Environment):
    """Guess the hidden five-letter word in six attempts."""

    name = "wordle"
    splits = ("train", "test")
    max_turns = 12  # six guesses plus room for invalid words and history calls
    rubric = Rubric(solved, partial_credit)
    blocking = False  # every call is a few microseconds of pure Python
    text_actions: ClassVar[Mapping[str, str | None]] = {"guess": "word", "get_history": None}
    policies: ClassVar[Mapping[str, str]] = {"solver": "omnienv.envs.wordle.solver:WordleSolver"}

    game: WordleGame

    @classmethod
    def random_strings(cls) -> list[str]:
        return sorted(accepted_words())

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return [Task(f"{split}/{i:04d}", split, answer=word) for i, word in enumerate(answers(split))]

    def setup(self, task: Task | None, rng: random.Random) -> str:
        answer = task.answer if task is not None else rng.choice(answers("train"))
        self.game = WordleGame(answer, accepted_words())
        return PROMPT

    @tool
    def guess(self, word: str) -> ToolResult:
        """Guess the hidden word.

        Args:
            word: A five-letter English word.
        """
        game = self.game
        try:
            marks = game.guess(word)
        except ValueError as exc:
            raise ToolError(f"{exc}; this guess did not use an attempt.") from None
        line = f"{game.guesses[-1].upper()} {marks}"
        if game.won:
            return ToolResult.of(
                f"{line} — Correct! Solved in {len(game.guesses)} guesses.", done=True, info={"success": True}
            )
        if game.over:
            return ToolResult.of(
                f"{line} — Out of guesses. The word was '{game.answer}'.", done=True, info={"success": False}
            )
        left = MAX_ATTEMPTS - len(game.guesses)
        return ToolResult.of(f"{line} — {left} guess{'es' if left > 1 else ''} left.")

    @tool
    def get_history(self) -> str:
        """Show every guess so far with its marks."""
        game = self.game
        lines = [f"{i}. {g.upper()} {m}" for i, (g, m) in enumerate(zip(game.guesses, game.marks, strict=False), 1)]
        lines.append(f"Guesses used: {len(game.guesses)}/{MAX_ATTEMPTS}")
        return "\n".join(lines)

    def state_fields(self) -> dict[str, object]:
        game = self.game
        return {
            "guesses": list(game.guesses),
            "marks": list(game.marks),
            "attempts_left": MAX_ATTEMPTS - len(game.guesses),
        }
