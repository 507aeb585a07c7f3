"""A synchronous text-in, text-out session over any environment: what text dialects share.

Gymnasium, SkyRL Gym and GEM all hand the environment one string per turn and expect one string
back. ``TextSession`` does that once: parse the reply with the environment's text grammar, run
its calls in order (stopping when the episode ends), and fold the results into one
:class:`TextTurn`. A reply that holds no valid call costs a turn and answers with the expected
format, so a model that never learns the format still reaches ``max_turns``.

Async environments run on a private event loop owned by the session, because these frameworks
call ``step`` from plain synchronous code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeAlias

from omnienv.core import (
    ActionError,
    AsyncEnvironment,
    Environment,
    EnvironmentBase,
    EpisodeOverError,
    State,
    StepResult,
    Task,
    ToolCall,
    load_environment,
)
from omnienv.core.text_actions import TagGrammar, TextActions, TextTurn, merge_results, render_tools_prompt

__all__ = ["EnvLike", "TextSession", "prompt_text", "resolve_env"]

EnvLike: TypeAlias = "Environment | AsyncEnvironment | type[EnvironmentBase] | str"


def resolve_env(env: EnvLike) -> Environment | AsyncEnvironment:
    """An environment instance from an instance, a class, a registered name or ``module:Class``."""
    if isinstance(env, str):
        env = load_environment(env)
    if isinstance(env, type):
        env = env()
    if not isinstance(env, Environment | AsyncEnvironment):
        raise TypeError(f"expected an omnienv Environment, its class or its registered name, got {type(env).__name__}")
    return env


def prompt_text(env: EnvLike, task: Task | str | None, seed: int | None) -> str:
    """The prompt of one episode, from a throwaway environment reset with the same task and seed.

    Dialects whose frameworks need the prompt before the episode's own environment exists
    (verifiers builds its dataset up front) use this; it is safe inside a running event loop.
    """
    instance = resolve_env(env)
    if isinstance(instance, AsyncEnvironment):
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, _async_prompt(instance, task, seed)).result()
    try:
        return instance.reset(task, seed).text
    finally:
        instance.close()


async def _async_prompt(env: AsyncEnvironment, task: Task | str | None, seed: int | None) -> str:
    try:
        return (await env.reset(task, seed)).text
    finally:
        await env.close()


class TextSession:
    """One environment driven by text; not thread-safe (one session per rollout)."""

    def __init__(self, env: EnvLike, *, tags: TagGrammar | None = None, max_turns: int | None = None) -> None:
        env = resolve_env(env)
        self.env = env
        self.actions = TextActions.for_env(env, tags)
        self.max_turns = max_turns if max_turns is not None else env.max_turns
        self.turns = 0
        self.finished = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"TextSession({self.env!r}, turns={self.turns})"

    @property
    def instructions(self) -> str:
        """The system prompt that teaches a text-only model the tools and the call format."""
        return render_tools_prompt(self.env.tools, self.actions.tags)

    def _run(self, value: Any) -> Any:
        if not isinstance(self.env, AsyncEnvironment):
            return value
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(value)

    def reset(self, task: Task | str | None = None, seed: int | None = None) -> str:
        """Start an episode; returns the prompt's text. Setup crashes raise EnvironmentFailure."""
        observation = self._run(self.env.reset(task, seed))
        self.turns = 0
        self.finished = False
        return str(observation.text)

    def step(self, text: str) -> TextTurn:
        """Run every call in the reply ``text`` and fold their results into one turn."""
        if self.finished:
            raise EpisodeOverError(f"{self.env.name}: the episode is over; call reset() to start another")
        try:
            calls = self.actions.parse(text)
        except ActionError as exc:
            error = {"code": exc.code, "message": exc.message}
            return self._end_turn(TextTurn(exc.message, info={"error": error}))
        return self.step_calls(calls)

    def step_calls(self, calls: Sequence[ToolCall]) -> TextTurn:
        """Run already-parsed calls in order, stopping when the episode ends, as one turn."""
        if self.finished:
            raise EpisodeOverError(f"{self.env.name}: the episode is over; call reset() to start another")
        if not calls:
            raise ValueError("step_calls needs at least one ToolCall")
        results: list[StepResult] = []
        for call in calls:
            result = self._run(self.env.step(call))
            results.append(result)
            if result.finished or result.failure is not None:
                break
        return self._end_turn(merge_results(results))

    def _end_turn(self, turn: TextTurn) -> TextTurn:
        self.turns += 1
        if not turn.finished and self.max_turns is not None and self.turns >= self.max_turns:
            turn = TextTurn(turn.text, turn.reward, turn.done, True, turn.info, turn.failure, turn.images)
        self.finished = turn.finished
        return turn

    def state(self) -> State:
        return self._run(self.env.state())  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close the environment and the private loop; safe to call more than once."""
        self._run(self.env.close())
        if self._loop is not None:
            self._loop.close()
            self._loop = None
