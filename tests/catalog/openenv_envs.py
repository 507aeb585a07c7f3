"""Small OpenEnv environments, written against OpenEnv 0.10.0's public API the way its authors write
them, for the tests of omnienv's OpenEnv importers (run in OpenEnv's own virtualenv).

- ``EchoGame``: an ``MCPEnvironment`` with FastMCP tools; echoing the word of the episode wins.
- ``GuessNumber``: a plain ``Environment`` with a pydantic Action (``guess``) and hints.
- ``Broken``: a plain environment whose every step raises, as a buggy environment does.

``app`` serves the first two from one OpenEnv server (OpenEnv's own ``create_app``), under
``/echo`` and ``/guess``: ``python -m uvicorn tests.catalog.openenv_envs:app --port P``.
"""

from __future__ import annotations

import random
from typing import Any

from fastapi import FastAPI
from fastmcp import FastMCP
from openenv.core.env_server import (
    Action,
    CallToolAction,
    CallToolObservation,
    Environment,
    MCPEnvironment,
    Observation,
    State,
    create_app,
)
from pydantic import Field

WORDS = ("apple", "river", "cloud", "stone", "maple", "tiger", "ocean", "piano")


class EchoGame(MCPEnvironment):
    """Echo the episode's word back to win."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("echo_game")
        self._word = WORDS[0]
        self._won = False
        self._steps = 0

        @mcp.tool
        def echo(message: str) -> str:
            """Echo a message back.

            Args:
                message: What to say.
            """
            self._won = message.strip().lower() == self._word
            return message

        @mcp.tool
        def shout(message: str, times: int = 1) -> str:
            """Echo a message back in capitals, repeated.

            Args:
                message: What to say.
                times: How many times.
            """
            if times < 1:
                raise ValueError("times must be at least 1")
            return " ".join([message.upper()] * times)

        super().__init__(mcp)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        self._word = random.Random(seed).choice(WORDS)
        self._won, self._steps = False, 0
        return Observation(metadata={"message": f"Use the echo tool to say the word '{self._word}'."})

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        observation = super().step(action, timeout_s=timeout_s, **kwargs)
        return self._scored(action, observation)

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        observation = await super().step_async(action, timeout_s=timeout_s, **kwargs)
        return self._scored(action, observation)

    def _scored(self, action: Action, observation: Observation) -> Observation:
        if isinstance(action, CallToolAction):
            self._steps += 1
            observation.reward, observation.done = (1.0, True) if self._won else (0.0, False)
            self._won = False
        return observation

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return Observation(metadata={"error": f"unsupported action {type(action).__name__}"})

    @property
    def state(self) -> State:
        return State(step_count=self._steps)


class GuessAction(Action):
    """Guess the hidden number."""

    guess: int = Field(ge=1, le=20, description="A number from 1 to 20.")


class GuessObservation(Observation):
    hint: str = ""
    secret: int | None = None


class GuessState(State):
    guesses: int = 0


class GuessNumber(Environment[GuessAction, GuessObservation, GuessState]):
    """Find a number from 1 to 20 by its higher/lower hints."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._secret = 1
        self._state = GuessState(step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> GuessObservation:
        self._secret = random.Random(seed).randint(1, 20)
        self._state = GuessState(episode_id=episode_id, step_count=0)
        return GuessObservation(hint="I picked a number between 1 and 20.", metadata={"answer": self._secret})

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any) -> GuessObservation:
        self._state.step_count += 1
        if action.guess == self._secret:
            return GuessObservation(hint="Right!", reward=1.0, done=True, secret=self._secret)
        hint = "higher" if action.guess < self._secret else "lower"
        return GuessObservation(hint=f"No: the number is {hint} than {action.guess}.", reward=0.0)

    @property
    def state(self) -> GuessState:
        return self._state


class BrokenAction(Action):
    move: str = ""


class Broken(Environment[BrokenAction, Observation, State]):
    """Every step raises, as a buggy environment's does."""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        return Observation(metadata={"message": "Make a move."})

    def step(self, action: BrokenAction, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        raise RuntimeError("the environment's own bug")

    @property
    def state(self) -> State:
        return State(step_count=0)


app = FastAPI()
app.mount("/echo", create_app(EchoGame, CallToolAction, CallToolObservation, env_name="echo", max_concurrent_envs=32))
app.mount("/guess", create_app(GuessNumber, GuessAction, GuessObservation, env_name="guess", max_concurrent_envs=32))
