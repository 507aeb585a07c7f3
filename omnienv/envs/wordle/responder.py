"""The Wordle solver as the "model" of the scripted OpenAI-compatible server
(:mod:`omnienv.rollout.scripted_openai`), so evals and examples run the real client path offline."""

from __future__ import annotations

from typing import Any

from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.rollout.scripted_openai import Reply, observations

__all__ = ["wordle_responder"]


def wordle_responder(messages: list[dict[str, Any]]) -> Reply:
    """The solver as the "model" of :mod:`omnienv.rollout.scripted_openai`: it reads the marks
    in the conversation's tool results, exactly as a model would see them."""
    history = [marks for text in observations(messages) if (marks := read_marks(text))]
    return [("guess", {"word": next_guess(history)})]
