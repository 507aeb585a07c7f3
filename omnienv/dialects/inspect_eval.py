"""Inspect AI: any omnienv environment as an Inspect task, its tools as Inspect tools.

    from inspect_ai import eval
    from omnienv.dialects.inspect_eval import environment_task

    eval(environment_task("wordle", split="test", limit=20), model="openai/gpt-4.1-mini")

Each sample is one task of the split. The solver resets a fresh environment, shows the prompt,
and lets the model call tools until the episode ends, the model stops calling tools or the turn
budget runs out; the scorer reports the episode's reward (rubric included). An episode whose
infrastructure failed is left unscored (the scorer returns None), so it never counts as 0.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessageTool,
    ChatMessageUser,
    ContentImage,
    ContentText,
    get_model,
)
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolInfo, ToolParams

from omnienv.core import (
    EnvironmentBase,
    EpisodeLedger,
    ImageBlock,
    Observation,
    TextBlock,
    ToolCall,
    as_async,
    load_environment,
)

__all__ = ["environment_task"]

_RESULT = "omnienv"


def environment_task(
    env: str | type[EnvironmentBase], split: str = "test", limit: int | None = None, max_turns: int = 50
) -> Task:
    """An Inspect task over ``split`` of ``env`` (a registered name or an Environment class)."""
    env_class = load_environment(env) if isinstance(env, str) else env
    tasks = env_class.task_index().split(split)[:limit]
    samples = [Sample(input=f"{env_class.name} task {t.id}", id=t.id, metadata={"task_id": t.id}) for t in tasks]
    return Task(
        dataset=MemoryDataset(samples, name=f"{env_class.name}-{split}"),
        solver=_play(env_class, max_turns),
        scorer=_episode_reward(),
        name=env_class.name,
    )


@solver
def _play(env_class: type[EnvironmentBase], max_turns: int) -> Any:
    tools = [
        ToolInfo(name=spec.name, description=spec.description, parameters=ToolParams.model_validate(spec.parameters))
        for spec in env_class.tools.values()
    ]

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        env = as_async(env_class())
        ledger = EpisodeLedger()
        try:
            prompt = await env.reset(task=state.metadata["task_id"])
            state.messages = [ChatMessageUser(content=_content(prompt))]
            model = get_model()
            for _ in range(max_turns):
                output = await model.generate(state.messages, tools=tools)
                state.output = output
                state.messages.append(output.message)
                calls = output.message.tool_calls or []
                if not calls:
                    break
                for call in calls:
                    result = ledger.record(await env.step(ToolCall(call.function, call.arguments, call.id)))
                    state.messages.append(
                        ChatMessageTool(
                            content=_content(result.observation), tool_call_id=call.id, function=call.function
                        )
                    )
                    if ledger.over:
                        break
                if ledger.over:
                    break
            if not ledger.over:  # the model stopped or ran out of turns: end the episode and score it
                ledger.record(await env.end(), step=False)
        finally:
            await env.close()
        failure = ledger.failure.to_dict() if ledger.failure is not None else None
        outcome = {"reward": ledger.reward, "done": ledger.done, "truncated": ledger.truncated, "failure": failure}
        state.store.set(_RESULT, outcome)
        return state

    return solve


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
