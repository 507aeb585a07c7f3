"""Doors: read a clue, then open the door it points to.

The smallest environment in which acting well needs what an earlier tool call returned: the
prompt names four doors, ``read_clue`` describes the one with the prize (never by its name), and
``open_door`` ends the episode. An agent that ignores the clue wins one time in four; one that
reads it wins every time. That gap is what ``examples/train_demo.py`` closes with GRPO, training a
tiny model from scratch on a laptop CPU in minutes.
"""

from __future__ import annotations

import random
from typing import Literal

from omnienv.core import Environment, Rubric, Task, ToolResult, tool

Door = Literal["red", "green", "blue", "yellow"]
DOORS: tuple[Door, ...] = ("red", "green", "blue", "yellow")
CLUES: dict[Door, str] = {
    "red": "the colour of a ripe tomato",
    "green": "the colour of fresh grass",
    "blue": "the colour of a clear sky",
    "yellow": "the colour of a lemon",
}
PROMPT = (
    "A prize is behind one of four doors: red, green, blue and yellow. "
    "Call `read_clue` to learn which door, then `open_door` with that door."
)
TASKS_PER_SPLIT = 64


def clue_text(door: Door) -> str:
    return f"The prize is behind the door that is {CLUES[door]}."


def opened_the_right_door(env: Doors) -> float:
    """1 for the door with the prize, 0 for any other door or none."""
    return 1.0 if env.opened == env.prize else 0.0


class Doors(Environment):
    """Read a clue, then open the door it points to."""

    splits = ("train", "test")
    max_turns = 4
    rubric = Rubric(opened_the_right_door)
    blocking = False

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        """Every four consecutive tasks have each door once as the prize, in an order drawn once
        per split: a trainer taking tasks in order sees each door equally often at every step,
        so that nothing but the clue tells the right door from the others."""
        rng = random.Random(split)
        doors = [door for _ in range(TASKS_PER_SPLIT // len(DOORS)) for door in rng.sample(DOORS, len(DOORS))]
        return [Task(f"{split}/{i:02d}", split, answer=door) for i, door in enumerate(doors)]

    def render_prompt(self, task: Task | None, rng: random.Random) -> str:
        return PROMPT  # the same for every task: only the clue tells the doors apart

    def setup(self, task: Task | None, rng: random.Random) -> str:
        self.prize: Door = task.answer if task else rng.choice(DOORS)
        self.opened: str | None = None
        return PROMPT

    @tool
    def read_clue(self) -> str:
        """Read the clue that tells which door hides the prize."""
        return clue_text(self.prize)

    @tool
    def open_door(self, door: Door) -> ToolResult:
        """Open one door; this ends the game.

        Args:
            door: The door to open: red, green, blue or yellow.
        """
        self.opened = door
        won = door == self.prize
        return ToolResult.of("You found the prize!" if won else "This door is empty.", done=True)

    def state_fields(self) -> dict[str, object]:
        return {"opened": self.opened}
