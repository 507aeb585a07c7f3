"""The classic verifiers API (0.1 to 0.3): ``load_environment`` returning a ``vf.StatefulToolEnv``.

``vf.load_environment("omnienv-verifiers", env="wordle", split="test")`` (or ``vf-eval
omnienv-verifiers -a '{"env": "wordle"}'``) builds an :class:`OmniToolEnv`:

- the dataset has one row per task of the split (or of ``tasks``): ``question`` is the
  environment's preview prompt for the row's task and seed (no kernel or display starts to
  build it), ``info`` holds the task id and seed, and ``answer`` stays empty;
- ``setup_state`` builds a fresh omnienv environment per rollout and resets it to that task,
  so concurrent rollouts never share a game;
- every omnienv ``@tool`` is added with ``add_tool(..., args_to_skip=["omnienv_state"])``: the
  model sees the tool's own arguments; ``update_tool_args`` injects the rollout's state;
- a tool's images reach the model as verifiers' own multimodal tool content: a list of
  ``{"type": "text"}`` and ``{"type": "image_url", "image_url": {"url": "data:..."}}`` parts;
- ``state["omnienv"]`` carries the summed reward, flags and rubric parts; a ``@vf.stop`` ends
  the rollout once the episode is over. When verifiers stops first (``max_turns``, a reply
  without tool calls, a timeout), the cleanup handler ends the episode (``env.end()``: the
  rubric scores the state reached, ``truncated``) before verifiers scores the rollout, then
  closes the environment.

Rewards: the rubric's one weighted function is ``episode_reward`` (tool rewards plus the omnienv
rubric's final score); the omnienv rubric's parts are zero-weight metrics. An infrastructure
failure sets ``state["error"]`` to a ``vf.InfraError``: verifiers' ``has_error`` stop ends the
rollout and marks it errored, which trainers mask; its reward is NaN, never a 0 that could be
trained on.
"""

from __future__ import annotations

import inspect
import math
import typing
from typing import Any

import verifiers as vf
from datasets import Dataset

from omnienv.core import (
    AsyncEnv,
    EnvironmentBase,
    EpisodeLedger,
    ImageBlock,
    StepResult,
    TextBlock,
    ToolCall,
    ToolSpec,
    UsageError,
    as_async,
)
from omnienv.core import load_environment as load_omnienv
from omnienv.dialects._text import prompt_text, resolve_env

__all__ = ["OmniToolEnv", "load_environment"]

HIDDEN = "omnienv_state"


def load_environment(
    env: str = "wordle",
    split: str | None = None,
    seed: int = 0,
    num_examples: int = -1,
    tasks: list[str] | None = None,
    **kwargs: Any,
) -> OmniToolEnv:
    """The verifiers environment for omnienv environment ``env`` (a name or ``module:Class``);
    ``tasks`` keeps only those task ids of the split, in that order."""
    return OmniToolEnv(env, split=split, seed=seed, num_examples=num_examples, tasks=tasks, **kwargs)


class OmniToolEnv(vf.StatefulToolEnv):
    """An omnienv environment as a verifiers ``StatefulToolEnv``, one instance per rollout."""

    def __init__(
        self,
        env: str,
        *,
        split: str | None = None,
        seed: int = 0,
        num_examples: int = -1,
        episodes: int = 100,
        tasks: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        cls = load_omnienv(env)
        self.omnienv_name = env
        self.omnienv_class = cls
        self._episodes: dict[str, tuple[AsyncEnv, EpisodeLedger]] = {}
        split = split or (cls.splits[0] if cls.splits else None)
        task_ids: list[str | None] = [t.id for t in cls.task_index().split(split)] if split else [None] * episodes
        if tasks:
            unknown = sorted(set(tasks) - set(task_ids))
            if unknown:
                raise UsageError(f"tasks: no task {unknown} in {cls.name}'s split {split!r}")
            task_ids = list(tasks)
        if num_examples > 0:
            task_ids = task_ids[:num_examples]
        rows = [
            {
                "question": prompt_text(cls, task_id, seed + i),
                "answer": "",
                "info": {"task_id": task_id or "", "seed": seed + i},
            }
            for i, task_id in enumerate(task_ids)
        ]
        rubric = vf.Rubric(funcs=[episode_reward], weights=[1.0])
        for part in _rubric_parts(cls):
            rubric.add_metric(part)
        kwargs.setdefault("max_turns", cls.max_turns or 10)
        super().__init__(eval_dataset=Dataset.from_list(rows), rubric=rubric, **kwargs)
        for spec in cls.tools.values():
            self.add_tool(self._tool(spec), args_to_skip=[HIDDEN])

    def _tool(self, spec: ToolSpec) -> Any:
        """``async def name(<tool arguments>, omnienv_state)``, documented for verifiers' schema."""

        async def call(**arguments: Any) -> str | list[dict[str, Any]]:
            state = arguments.pop(HIDDEN)
            return await self._step(state, ToolCall(spec.name, arguments))

        hints = typing.get_type_hints(spec.function)
        parameters = [
            parameter.replace(annotation=hints.get(parameter.name, Any))
            for parameter in list(inspect.signature(spec.function).parameters.values())[1:]
        ]
        parameters.append(inspect.Parameter(HIDDEN, inspect.Parameter.KEYWORD_ONLY, annotation=dict))
        call.__signature__ = inspect.Signature(parameters, return_annotation=Any)  # type: ignore[attr-defined]
        call.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": Any}
        call.__name__ = spec.name
        properties = spec.parameters.get("properties", {})
        args = "".join(f"\n    {name}: {prop.get('description') or name}" for name, prop in properties.items())
        call.__doc__ = spec.description + (f"\n\nArgs:{args}" if args else "")
        return call

    async def setup_state(self, state: Any, **kwargs: Any) -> Any:
        env = as_async(resolve_env(self.omnienv_class))
        info = state.get("info") or {}
        await env.reset(info.get("task_id") or None, info.get("seed"))
        ledger = EpisodeLedger(seed=info.get("seed"))
        self._episodes[state["trajectory_id"]] = env, ledger
        state["omnienv"] = _mirror(ledger, {})
        return await super().setup_state(state, **kwargs)

    def update_tool_args(self, tool_name: str, tool_args: dict, messages: Any, state: Any, **kwargs: Any) -> dict:
        return {**tool_args, HIDDEN: state}

    async def _step(self, state: Any, call: ToolCall) -> str | list[dict[str, Any]]:
        found = self._episodes.get(state["trajectory_id"])
        if found is None or found[1].over:
            return "The episode is over; no more tool calls are accepted."
        env, ledger = found
        try:
            result = ledger.record(await env.step(call))
        except UsageError as exc:
            return exc.message
        self._sync(state, ledger, result)
        return _content(result)

    def _sync(self, state: Any, ledger: EpisodeLedger, result: StepResult) -> None:
        """Mirror the ledger into the rollout's state; a failure becomes verifiers' InfraError."""
        rubric = state["omnienv"].get("rubric", {})
        if "rubric" in result.info:
            rubric = {name: float(value) for name, value in result.info["rubric"].items()}
        state["omnienv"] = _mirror(ledger, rubric)
        if result.failure is not None:
            state["error"] = vf.InfraError(f"{result.failure.kind}: {result.failure.message}")

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        """The tool results; once the episode is over they are final, so the model is not asked again."""
        response = await super().env_response(messages, state, **kwargs)
        if _over(state.get("omnienv") or {}):
            state["final_env_response"] = response
        return response

    @vf.stop
    async def episode_over(self, state: Any) -> bool:
        """Stop asking the model once the omnienv episode is over."""
        return _over(state.get("omnienv") or {})

    @vf.cleanup
    async def close_episode(self, state: Any) -> None:
        """End an episode verifiers stopped early (scoring it with the rubric), then close it.

        verifiers runs cleanup handlers before it scores the rollout, so the rubric's score is
        in ``state["omnienv"]`` by the time ``episode_reward`` reads it.
        """
        found = self._episodes.pop(state.get("trajectory_id"), None)
        if found is None:
            return
        env, ledger = found
        try:
            if not ledger.over:
                self._sync(state, ledger, ledger.record(await env.end(), step=False))
        finally:
            await env.close()


def _mirror(ledger: EpisodeLedger, rubric: dict[str, float]) -> dict[str, Any]:
    """The ledger as verifiers keeps it in its (serialisable) rollout state."""
    failure = ledger.failure.to_dict() if ledger.failure is not None else None
    return {
        "reward": ledger.reward,
        "steps": ledger.steps,
        "done": ledger.done,
        "truncated": ledger.truncated,
        "over": ledger.over,
        "rubric": rubric,
        "failure": failure,
    }


def _over(episode: dict[str, Any]) -> bool:
    return bool(episode.get("over"))


def _content(result: StepResult) -> str | list[dict[str, Any]]:
    """A step's observation as verifiers' tool content: plain text, or text and image parts."""
    blocks = result.observation.content
    if not any(isinstance(block, ImageBlock) for block in blocks):
        return result.observation.text
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ImageBlock):
            parts.append({"type": "image_url", "image_url": {"url": block.data_url}})
        elif isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
    return parts


async def episode_reward(state: Any, **kwargs: Any) -> float:
    """The tools' rewards plus the omnienv rubric's final score; NaN for a failed episode.

    verifiers turns a raising reward function into 0.0, a score a trainer would learn from, so
    a void episode (ours, an ``InfraError`` in ``state["error"]``, or any other error verifiers
    recorded) answers NaN instead.
    """
    episode = state.get("omnienv") or {}
    if episode.get("failure") is not None or state.get("error") is not None:
        return math.nan
    return float(episode.get("reward", 0.0))


def _rubric_parts(cls: type[EnvironmentBase]) -> list[Any]:
    """One zero-weight metric per part of the environment's rubric, for logging."""
    if cls.rubric is None:
        return []
    metrics = []
    for name, _, _ in cls.rubric.functions:

        async def part(state: Any, _name: str = name, **kwargs: Any) -> float:
            return float((state.get("omnienv") or {}).get("rubric", {}).get(_name, 0.0))

        part.__name__ = name
        metrics.append(part)
    return metrics
