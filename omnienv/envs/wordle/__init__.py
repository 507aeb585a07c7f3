"""Wordle, the reference text environment. See :mod:`omnienv.envs.wordle.env`."""

from omnienv.envs.wordle.env import Wordle, WordleGame, accepted_words, answers, score_guess

__all__ = ["Wordle", "WordleGame", "accepted_words", "answers", "score_guess"]
