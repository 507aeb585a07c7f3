"""Wordle as an ORS environment written with openreward's own SDK, served by openreward's ``Server``.

Run inside openreward's virtualenv (``python tests/catalog/ors_wordle_server.py PORT``);
tests/peers/test_catalog_ors.py imports it by URL. It is ORS as its users write it: task specs
that hold the answer (``{"answer": "..."}``, no ids), a tool taking a pydantic model and a tool
taking none, a reward and ``finished`` in each ``ToolOutput``, and ``setup()`` run by the server
in the background. The game's rules are omnienv's Wordle helpers, so omnienv's solver can win it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"  # no PyPI query at start
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import uvicorn
from openreward.environments import Environment, JSONObject, Server, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field

from omnienv.envs.wordle.env import MAX_ATTEMPTS, WordleGame, accepted_words, answers

TASKS = {split: [{"answer": word} for word in answers(split)[:20]] for split in ("train", "test")}
TASKS["broken"] = [{"answer": "crash"}]  # its game raises: the server's own bug, an SSE error event


class GuessParams(BaseModel):
    word: str = Field(description="A five-letter English word.")


class WordleORS(Environment):
    """Guess the hidden five-letter word in six attempts."""

    def __init__(self, task_spec: JSONObject = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006 (the SDK's signature)
        super().__init__(task_spec)
        self.game = WordleGame(str(task_spec["answer"]), accepted_words())

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train", "test", "broken"]

    @classmethod
    def list_tasks(cls, split: str) -> list[JSONObject]:
        return list(TASKS[split])

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(type="text", text="Play Wordle: guess the hidden five-letter word in 6 attempts.")]

    @tool
    async def guess(self, params: GuessParams) -> ToolOutput:
        """Guess the hidden word."""
        game = self.game
        if game.answer == "crash":
            raise RuntimeError("the game's server-side bug")
        try:
            marks = game.guess(params.word)
        except ValueError as exc:
            return ToolOutput(blocks=[TextBlock(type="text", text=f"{exc}; try another word.")], reward=0.0)
        line = f"{game.guesses[-1].upper()} {marks}"
        if game.won:
            return ToolOutput(blocks=[TextBlock(type="text", text=f"{line} — Correct!")], reward=1.0, finished=True)
        if game.over:
            return ToolOutput(blocks=[TextBlock(type="text", text=f"{line} — Out of guesses.")], finished=True)
        left = MAX_ATTEMPTS - len(game.guesses)
        return ToolOutput(blocks=[TextBlock(type="text", text=f"{line} — {left} left.")], reward=0.0)

    @tool
    async def history(self) -> ToolOutput:
        """Show every guess so far with its marks."""
        lines = [f"{g.upper()} {m}" for g, m in zip(self.game.guesses, self.game.marks, strict=True)]
        return ToolOutput(blocks=[TextBlock(type="text", text="\n".join(lines) or "No guesses yet.")])


if __name__ == "__main__":
    uvicorn.run(Server([WordleORS]).app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
