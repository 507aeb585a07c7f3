"""A synchronous text-in, text-out session over any environment: what text dialects share.

Gymnasium, SkyRL Gym and GEM all hand the environment one string per turn and expect one string
back. ``TextSession`` does that once: parse the reply with the environment's text grammar, run
its calls in order (stopping when the episode ends), and fold the results into one
:class:`TextTurn`. A reply that holds no valid call costs a turn and answers with the expected
format, so a model that never learns the format still reaches ``max_turns``.

Async environments run through :func:`omnienv.core.as_sync`, because these frameworks call
``step`` from plain synchronous code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from omnienv.core import (
    ActionError,
    AsyncEnvironment,
    Environment,
    EnvironmentBase,
    EpisodeLedger,
    EpisodeOverError,
    Failure,
    ImageBlock,
    InvalidTypeError,
    State,
    StepResult,
    Task,
    ToolCall,
    as_sync,
    load_environment,
)
from omnienv.core.text_actions import TagGrammar, TextActions, TextTurn, merge_results, render_tools_prompt

__all__ = ["EnvLike", "TextSession", "prompt_text", "resolve_env"]

EnvLike: TypeAlias = "Environment | AsyncEnvironment | type[EnvironmentBase] | str"


def resolve_env(env: EnvLike) -> Environment | AsyncEnvironment:
    """An environment instance from an instance, a class, a registered name or ``module:Class``."""
    found: object = load_environment(env) if isinstance(env, str) else env
    if isinstance(found, type):
        found = found()
    if not isinstance(found, Environment | AsyncEnvironment):
        raise InvalidTypeError(
            "expected an omnienv Environment, its class or its registered name (such as 'wordle'), "
            f"got {type(found).__name__} {found!r:.80}"
        )
    return found


def prompt_text(env: EnvLike, task: Task | str | None, seed: int | None) -> str:
    """The prompt of one episode, from a throwaway environment reset with the same task and seed.

    Dialects whose frameworks need the prompt before the episode's own environment exists
    (verifiers builds its dataset up front) use this; it is safe inside a running event loop.
    """
    resolved = resolve_env(env)
    preview = resolved.preview(task, seed)
    if preview is not None:  # the environment knows its prompt without a sandbox
        return preview.text
    instance = as_sync(resolved)
    try:
        return instance.reset(task, seed).text
    finally:
        instance.close()


class TextSession:
    """One environment driven by text; not thread-safe (one session per rollout)."""

    def __init__(self, env: EnvLike, *, tags: TagGrammar | None = None, max_turns: int | None = None) -> None:
        instance = resolve_env(env)
        self.env = instance
        self.sync = as_sync(instance)
        self.actions = TextActions.for_env(instance, tags)
        self.max_turns = max_turns if max_turns is not None else instance.max_turns
        self.ledger = EpisodeLedger()
        """The episode as the framework sees it, turn by turn."""
        self.prompt_images: tuple[ImageBlock, ...] = ()
        """The images of the last reset's prompt: :meth:`reset` returns only its text."""

    def __repr__(self) -> str:
        return f"TextSession({self.env!r}, turns={self.turns})"

    @property
    def turns(self) -> int:
        return self.ledger.steps

    @property
    def over(self) -> bool:
        return self.ledger.over

    @property
    def instructions(self) -> str:
        """The system prompt that teaches a text-only model the tools and the call format."""
        return render_tools_prompt(self.env.tools, self.actions.tags)

    def reset(self, task: Task | str | None = None, seed: int | None = None) -> str:
        """Start an episode; returns the prompt's text. Setup crashes raise EnvironmentFailure.

        A reset that raised leaves a failed episode behind, so every step is refused until a
        reset succeeds: the environment still holds the episode before it (its ``setup`` ran
        halfway), and a step would go on playing that one, scored as if nothing had happened.
        """
        self.ledger = EpisodeLedger(seed=seed)
        self.prompt_images = ()
        try:
            observation = self.sync.reset(task, seed)
        except Exception as exc:
            self.ledger.fail(Failure.from_exception("reset", exc))
            raise
        self.prompt_images = tuple(block for block in observation.content if isinstance(block, ImageBlock))
        return observation.text

    def step(self, text: str) -> TextTurn:
        """Run every call in the reply ``text`` and fold their results into one turn."""
        self._require_running()
        try:
            calls = self.actions.parse(text)
        except ActionError as exc:
            error = {"code": exc.code, "message": exc.message}
            return self._end_turn(TextTurn(exc.message, info={"error": error}))
        return self.step_calls(calls)

    def step_calls(self, calls: Sequence[ToolCall]) -> TextTurn:
        """Run already-parsed calls in order, stopping when the episode ends, as one turn."""
        self._require_running()
        if not calls:
            raise ValueError("step_calls needs at least one ToolCall")
        results: list[StepResult] = []
        for call in calls:
            result = self.sync.step(call)
            results.append(result)
            if result.over:
                break
        return self._end_turn(merge_results(results))

    def end(self) -> TextTurn:
        """End the episode now (the framework's turn budget ran out) and score it: the turn
        carries the rubric's reward. An episode already over gets an empty turn."""
        if self.ledger.over:
            return TextTurn("", 0.0, self.ledger.done, self.ledger.truncated, {}, self.ledger.failure)
        return self._end_turn(merge_results([self.sync.end()]), count=False)

    def _require_running(self) -> None:
        if self.ledger.over:
            raise EpisodeOverError(f"{self.env.name}: the episode is over; call reset() to start another")

    def _end_turn(self, turn: TextTurn, *, count: bool = True) -> TextTurn:
        limit = self.max_turns
        if count and not turn.over and limit is not None and self.ledger.steps + 1 >= limit:
            ended = self.sync.end()  # the turn budget is spent: score the episode as cut short
            turn = TextTurn(
                turn.text,
                turn.reward + ended.reward,
                turn.done,
                True,
                {**turn.info, **ended.info},
                ended.failure,
                turn.images,
            )
        return self.ledger.record(turn, step=count)

    def state(self) -> State:
        return self.sync.state()

    def close(self) -> None:
        """Close the environment; safe to call more than once."""
        self.sync.close()
