"""Gymnasium's toy-text environments, their discrete actions as typed tools.

FrozenLake and CliffWalking get ``move(direction)``, Taxi ``move``, ``pickup`` and ``dropoff``,
Blackjack ``hit`` and ``stick``. Observations are written out as text a model can read (a grid
with the player marked, or the hand in words), since Gymnasium's own are integers. The reward is
the environment's; ``terminated`` ends the episode (``done``) and the TimeLimit's ``truncated``
is reported as truncation. A task is a reset seed (train and test seed ranges).

gymnasium is a core dependency; it is imported only when one of these environments starts.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from omnienv.catalog._foreign import DEFAULT_SPLITS, ForeignEnvironment, foreign_reward, make_class
from omnienv.catalog.manifest import CatalogEntry
from omnienv.core import Task, ToolResult, tool

__all__ = ["GRID_ACTIONS", "TOY_TEXT", "ToyText", "candidates", "environment", "probe", "version"]

SOURCE = "gymnasium"


class ToyText(ForeignEnvironment):
    """A Gymnasium toy-text environment behind typed tools."""

    extras = ("gymnasium",)

    blocking = False  # every step is microseconds of pure Python
    _gym: Any = None
    _obs: Any = None

    def setup(self, task: Task | None, rng: random.Random) -> str:
        if self._gym is None:
            gymnasium = importlib.import_module("gymnasium")
            self._gym = gymnasium.make(self.entry.target)
        self._obs, _ = self._gym.reset(seed=self.seed_of(task, rng))
        return f"{self.rules}\n\n{self.describe()}"

    rules: ClassVar[str] = ""

    def describe(self) -> str:
        """The current observation as text."""
        raise NotImplementedError

    def act(self, action: int, what: str) -> ToolResult:
        """Take Gymnasium action ``action``; ``what`` says in words what the agent did."""
        self._obs, raw_reward, terminated, truncated, _ = self._gym.step(action)
        reward = foreign_reward(raw_reward, "Gymnasium's step")
        if truncated and not terminated:
            self.truncate()
        ending = ""
        if terminated:
            ending = "\nThe episode is over."
        elif truncated:
            ending = "\nOut of time: the episode was cut short."
        text = f"{what} Reward: {reward:g}.\n{self.describe()}{ending}"
        return ToolResult.of(text, reward=reward, done=bool(terminated))

    def teardown(self) -> None:
        if self._gym is not None:
            self._gym.close()
            self._gym = None

    def _grid(self, rows: list[str], position: int) -> str:
        width = len(rows[0])
        cells = [list(row) for row in rows]
        cells[position // width][position % width] = "P"
        return "\n".join("".join(row) for row in cells)


GRID_ACTIONS: dict[str, dict[str, int]] = {
    "FrozenLake": {"left": 0, "down": 1, "right": 2, "up": 3},
    "CliffWalking": {"up": 0, "right": 1, "down": 2, "left": 3},
    "Taxi": {"south": 0, "north": 1, "east": 2, "west": 3},
}


class FrozenLake(ToyText):
    rules = (
        "Cross the frozen lake from the start S to the goal G without falling into a hole H; F is safe ice. "
        "The ice is slippery: you may slide sideways. P marks you. Reaching G scores 1."
    )
    text_actions: ClassVar[Mapping[str, str | None]] = {"move": "direction"}

    def describe(self) -> str:
        rows = [b"".join(row).decode() for row in self._gym.unwrapped.desc]
        return self._grid(rows, int(self._obs))

    @tool
    def move(self, direction: Literal["left", "down", "right", "up"]) -> ToolResult:
        """Step one cell on the lake (the ice may make you slide sideways).

        Args:
            direction: Where to go: left, down, right or up.
        """
        return self.act(GRID_ACTIONS["FrozenLake"][direction], f"You tried to move {direction}.")


class CliffWalking(ToyText):
    rules = (
        "Walk from the start (bottom left) to the goal G (bottom right). Each step costs -1; stepping on "
        "the cliff C costs -100 and sends you back to the start. P marks you, o is open ground."
    )
    text_actions: ClassVar[Mapping[str, str | None]] = {"move": "direction"}

    def describe(self) -> str:
        height, width = self._gym.unwrapped.shape
        rows = ["o" * width] * (height - 1) + ["o" + "C" * (width - 2) + "G"]
        return self._grid(rows, int(self._obs))

    @tool
    def move(self, direction: Literal["up", "right", "down", "left"]) -> ToolResult:
        """Step one cell.

        Args:
            direction: Where to go: up, right, down or left.
        """
        return self.act(GRID_ACTIONS["CliffWalking"][direction], f"You moved {direction}.")


TAXI_STOPS = ("R", "G", "Y", "B")


class Taxi(ToyText):
    rules = (
        "Drive the taxi T to the passenger, pick them up, and drop them off at their destination. "
        "Stops are R, G, Y and B; walls '|' block east-west moves. Each step costs -1, a delivery scores +20, "
        "an illegal pickup or dropoff -10."
    )
    text_actions: ClassVar[Mapping[str, str | None]] = {"move": "direction", "pickup": None, "dropoff": None}

    def describe(self) -> str:
        unwrapped = self._gym.unwrapped
        row, col, passenger, destination = unwrapped.decode(int(self._obs))
        lines = [list(b"".join(line).decode()) for line in unwrapped.desc]
        lines[1 + row][2 * col + 1] = "T"
        where = "in the taxi" if passenger == 4 else f"waiting at {TAXI_STOPS[passenger]}"
        grid = "\n".join("".join(line) for line in lines)
        return f"{grid}\nThe passenger is {where}; their destination is {TAXI_STOPS[destination]}."

    @tool
    def move(self, direction: Literal["south", "north", "east", "west"]) -> ToolResult:
        """Drive one cell.

        Args:
            direction: Where to drive: south, north, east or west.
        """
        return self.act(GRID_ACTIONS["Taxi"][direction], f"You drove {direction}.")

    @tool
    def pickup(self) -> ToolResult:
        """Pick the passenger up (only where they wait)."""
        return self.act(4, "You tried to pick the passenger up.")

    @tool
    def dropoff(self) -> ToolResult:
        """Drop the passenger off (only at their destination)."""
        return self.act(5, "You tried to drop the passenger off.")


class Blackjack(ToyText):
    rules = (
        "Play one hand of blackjack against the dealer: get closer to 21 than the dealer without going over. "
        "Win +1, lose -1, draw 0."
    )
    text_actions: ClassVar[Mapping[str, str | None]] = {"hit": None, "stick": None}

    def describe(self) -> str:
        player, dealer, usable_ace = self._obs
        ace = "a usable ace" if usable_ace else "no usable ace"
        return f"Your hand totals {player} ({ace}); the dealer shows {dealer}."

    @tool
    def hit(self) -> ToolResult:
        """Take another card."""
        return self.act(1, "You hit.")

    @tool
    def stick(self) -> ToolResult:
        """Stop taking cards; the dealer plays and the hand is settled."""
        return self.act(0, "You stick.")


TOY_TEXT: dict[str, tuple[type[ToyText], str]] = {
    "FrozenLake-v1": (FrozenLake, "Cross a slippery frozen lake to the goal (4x4)."),
    "FrozenLake8x8-v1": (FrozenLake, "Cross a slippery frozen lake to the goal (8x8)."),
    "CliffWalking-v1": (CliffWalking, "Walk along a cliff to the goal without falling."),
    "Taxi-v4": (Taxi, "Pick a passenger up and drop them at their destination."),
    "Blackjack-v1": (Blackjack, "Play a hand of blackjack against the dealer."),
}
DEFAULT_LIMIT = 100
"""The turn limit of toy-text environments that Gymnasium leaves unbounded (CliffWalking)."""


def environment(entry: CatalogEntry) -> type[ForeignEnvironment]:
    return make_class(TOY_TEXT[entry.target][0], entry)


# -- the manifest (scripts/catalog_manifest.py) ---------------------------------------------------


def version() -> str:
    gymnasium = importlib.import_module("gymnasium")
    return str(gymnasium.__version__)


def candidates() -> list[CatalogEntry]:
    gymnasium = importlib.import_module("gymnasium")
    found = []
    for target, (base, description) in TOY_TEXT.items():
        limit = gymnasium.spec(target).max_episode_steps
        found.append(
            CatalogEntry(
                name=f"{SOURCE}/{target}",
                source=SOURCE,
                target=target,
                kind="multi-turn",
                description=description,
                tools=tuple(base.tools),
                splits=dict(DEFAULT_SPLITS),
                offline=True,
                max_turns=limit or DEFAULT_LIMIT,
            )
        )
    return found


def probe(entry: CatalogEntry) -> None:
    env = environment(entry)()
    env.reset(seed=0)
    env.close()
