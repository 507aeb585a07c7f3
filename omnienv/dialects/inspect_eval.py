"""Inspect AI: any omnienv environment as an Inspect task, its tools as Inspect tools.

    from inspect_ai import eval
    from omnienv.dialects.inspect_eval import environment_task

    eval(environment_task("wordle", split="test", limit=20), model="openai/gpt-4.1-mini")

or from the command line, with the tasks of ``examples/inspect_tasks.py``::

    inspect eval examples/inspect_tasks.py@jupyter -T limit=5 --model openai/gpt-4.1-mini

Each sample is one task of the split. The solver resets a fresh environment, shows the prompt,
and hands the turn to Inspect's own tool loop (``generate(tool_calls="loop")``): the model calls
the environment's tools as Inspect tools until the episode ends (the tool marks the sample
completed), the model stops calling tools or the turn budget runs out. An error observation (an
invalid action) reaches Inspect as the call's ``ToolError``, so its log and the model's provider
mark the call failed, as for Inspect's own tools; the episode goes on. The scorer reports the
episode's reward (rubric included). An episode whose infrastructure failed is left unscored (the
scorer returns None), so it never counts as 0.

Inspect's own sample limits (``message_limit``, ``token_limit``, ``time_limit``...) stop its loop
by raising out of the solver, and Inspect then scores the sample as it stands: the episode is cut
short, not void, so the solver ends it (``env.end()``: truncated, the rubric scores the state
reached) before letting the limit through. A time limit cancels the solver, and under a
cancelled scope every ``await`` is cancelled at once: ending and closing the environment run
shielded (for at most ``_CLEANUP_S`` each), or a kernel or a display would outlive the sample.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import anyio
from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, ContentImage, ContentText
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import Tool, ToolDef, ToolError, ToolParams
from inspect_ai.util import LimitExceededError

from omnienv.core import (
    AsyncEnv,
    EnvironmentBase,
    EpisodeLedger,
    ImageBlock,
    Observation,
    TaskError,
    TextBlock,
    ToolCall,
    as_async,
    load_environment,
)

__all__ = ["environment_task"]

_RESULT = "omnienv"
_OVER = "The episode is over; no more actions are taken."
_CLEANUP_S = 60.0
"""How long ending or closing an environment may take once Inspect has cancelled the sample."""


def environment_task(
    env: str | type[EnvironmentBase],
    split: str = "test",
    limit: int | None = None,
    max_turns: int = 50,
    tasks: Sequence[str] | None = None,
) -> Task:
    """An Inspect task over ``split`` of ``env`` (a registered name, ``"module:Class"`` or a class).

    Args:
        env: The environment.
        split: The split whose tasks become samples.
        limit: Keep the first ``limit`` tasks only.
        max_turns: Tool calls per episode before it is ended and scored as it stands.
        tasks: Only these task ids (in this order), instead of the split's.
    """
    env_class = load_environment(env) if isinstance(env, str) else env
    if tasks:
        index = env_class.task_index()
        chosen = [index.find(task_id) for task_id in tasks]
    else:
        chosen = list(env_class.task_index().split(split))
    chosen = chosen[:limit]
    if not chosen:
        raise TaskError(f"{env_class.name} has no tasks to evaluate in split '{split}' (tasks={tasks})")
    samples = [Sample(input=f"{env_class.name} task {t.id}", id=t.id, metadata={"task_id": t.id}) for t in chosen]
    return Task(
        dataset=MemoryDataset(samples, name=f"{env_class.name}-{split}"),
        solver=_play(env_class, max_turns),
        scorer=_episode_reward(),
        name=env_class.name,
    )


@solver
def _play(env_class: type[EnvironmentBase], max_turns: int) -> Any:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        env = as_async(env_class())
        ledger = EpisodeLedger()
        try:
            prompt = await env.reset(task=state.metadata["task_id"])
            state.messages = [ChatMessageUser(content=_content(prompt))]
            turns = [0]

            def tool_for(name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
                async def run(**kwargs: Any) -> Any:
                    if ledger.over:
                        return _OVER
                    result = ledger.record(await env.step(ToolCall(name, kwargs)))
                    turns[0] += 1
                    if ledger.over or turns[0] >= max_turns:
                        state.completed = True  # Inspect's loop stops after this call's results
                    if result.observation.is_error:  # the call failed: Inspect marks it so, as for its own tools
                        raise ToolError(result.observation.text)
                    return _content(result.observation)

                return run

            state.tools = [
                _inspect_tool(spec.name, spec.description, spec.parameters, tool_for(spec.name))
                for spec in env_class.tools.values()
            ]
            try:
                state = await generate(state, tool_calls="loop")
            except (LimitExceededError, anyio.get_cancelled_exc_class()):
                await _shielded(_end(env, ledger))  # Inspect scores a sample stopped at its limit
                _report(state, ledger)
                raise
            await _end(env, ledger)  # the model stopped or ran out of turns
            _report(state, ledger)
        finally:
            await _shielded(env.close())
        return state

    return solve


async def _end(env: AsyncEnv, ledger: EpisodeLedger) -> None:
    """End the episode and score it, unless it is already over."""
    if not ledger.over:
        ledger.record(await env.end(), step=False)


async def _shielded(work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` even in a cancelled sample, for at most ``_CLEANUP_S``."""
    with anyio.CancelScope(shield=True) as scope:
        scope.deadline = anyio.current_time() + _CLEANUP_S
        await work
    if scope.cancelled_caught:
        raise TimeoutError(f"cleaning up the environment took over {_CLEANUP_S:g}s")


def _report(state: TaskState, ledger: EpisodeLedger) -> None:
    """Leave the episode's outcome in the sample's store, for the scorer."""
    failure = ledger.failure.to_dict() if ledger.failure is not None else None
    outcome = {"reward": ledger.reward, "done": ledger.done, "truncated": ledger.truncated, "failure": failure}
    state.store.set(_RESULT, outcome)


def _inspect_tool(
    name: str, description: str, parameters: dict[str, Any], run: Callable[..., Coroutine[Any, Any, Any]]
) -> Tool:
    """An Inspect tool with the environment's own schema; Inspect passes its arguments through as given."""
    return ToolDef(run, name=name, description=description, parameters=ToolParams.model_validate(parameters)).as_tool()


@scorer(metrics=[mean(), stderr()])
def _episode_reward() -> Any:
    async def score(state: TaskState, target: Target) -> Score | None:
        outcome = state.store.get(_RESULT)
        if outcome is None or outcome["failure"] is not None:
            return None  # infrastructure failed: no score rather than a false 0
        ending = "done" if outcome["done"] else "truncated" if outcome["truncated"] else "stopped"
        return Score(value=outcome["reward"], explanation=f"episode {ending}", metadata=outcome)

    return score


def _content(observation: Observation) -> list[Any]:
    parts: list[Any] = []
    for block in observation.content:
        if isinstance(block, TextBlock):
            parts.append(ContentText(text=block.text))
        elif isinstance(block, ImageBlock):
            parts.append(ContentImage(image=block.data_url))
    return parts
