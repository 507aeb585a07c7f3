"""verifiers 0.4 (the ``verifiers.v1`` API): an omnienv environment as a taskset package.

verifiers v1 serves a task's tools as an MCP server in its own process, one per rollout, and
scores the rollout on the host. So:

- :class:`OmniToolset` is that per-rollout process: ``setup_task`` builds the environment named
  by the task and resets it to the task's id and seed; every omnienv ``@tool`` becomes an MCP
  tool with the same name, description and arguments; each call steps the environment and
  returns the observation as MCP content: text, and images as MCP image content, which
  verifiers' chat harness hands the model as ``image_url`` parts of the tool message (a
  desktop's screenshots reach a vision model as images, never as base64 text).
- :class:`OmniState` rides verifiers' state channel from the tool process to the host after
  every call: summed reward, done/truncated flags, rubric parts, failure.
- :class:`OmniTask` scores on the host: reward ``episode_reward`` (the tools' rewards plus the
  rubric's final score, the number every omnienv dialect reports), the rubric's parts as
  metrics, and a ``@vf.stop`` that ends the rollout as soon as the episode is over.
- :class:`OmniTaskset` yields one task per task of a split (``--env.taskset.env``,
  ``--env.taskset.split``, optionally only ``--env.taskset.tasks``); each prompt is the
  environment's preview for that task and seed (:func:`omnienv.dialects._text.prompt_text`),
  so building the taskset starts no kernel and no display.

When verifiers stops the rollout before the episode is over (its ``max_turns``, the model
answering without a tool call, a timeout), it shuts the tool process down before scoring; the
toolset then ends the episode (``env.end()``: the rubric scores the state reached, the episode
is ``truncated``) and syncs that last state, so the host scores it as every other dialect does.

An infrastructure failure (``StepResult.failure``) makes ``episode_reward`` raise, which
verifiers records as a ``TaskError`` on the trace: the rollout has an error, not a reward of 0,
and trainers drop errored rollouts.

This module is runnable (``python -m``) because verifiers starts tool servers that way.
"""

import inspect
import signal
import threading
import typing
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Annotated, Any

import verifiers.v1 as vf
from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import Field

from omnienv.core import (
    AsyncEnv,
    EnvironmentFailure,
    EpisodeLedger,
    ImageBlock,
    StepResult,
    TextBlock,
    ToolCall,
    ToolSpec,
    UsageError,
    as_async,
    load_environment,
)
from omnienv.dialects._text import prompt_text, resolve_env

__all__ = [
    "OmniState",
    "OmniTask",
    "OmniTaskData",
    "OmniTaskset",
    "OmniTasksetConfig",
    "OmniToolset",
    "OmniToolsetConfig",
]


class OmniTaskData(vf.TaskData):
    """Which environment, which of its tasks, which seed: all the tool process needs."""

    env: str
    task_id: str | None = None
    seed: int | None = None


class OmniState(vf.State):
    """The episode as the host sees it, synced from the tool process after every call."""

    steps: int = 0
    reward: float = 0.0
    done: bool = False
    truncated: bool = False
    over: bool = False
    """The ledger's word (ended, cut short or failed), mirrored: the host has no ledger."""
    rubric: dict[str, float] = Field(default_factory=dict)
    failure: dict[str, str] | None = None


class OmniToolsetConfig(vf.ToolsetConfig):
    pass


class OmniToolset(vf.Toolset[OmniToolsetConfig, OmniState]):
    """One rollout's environment, its tools served over MCP."""

    TOOL_PREFIX = None  # the model sees the environment's own tool names

    env: AsyncEnv | None = None
    specs: Mapping[str, ToolSpec] = MappingProxyType({})
    ledger: EpisodeLedger = EpisodeLedger()
    started: bool = False

    async def setup_task(self, task: Any) -> None:
        data: OmniTaskData = task  # verifiers hands tool servers the task's data
        instance = resolve_env(data.env)
        self.specs = instance.tools
        self.env = as_async(instance)
        self.ledger = EpisodeLedger(seed=data.seed)
        self._exit_stack.push_async_callback(self._finish)  # unwound when verifiers stops the server
        _outlive_sigterm()
        await self.env.reset(data.task_id, data.seed)
        self.started = True

    async def _finish(self) -> None:
        """End an episode verifiers stopped early and sync its score, then close the environment.

        verifiers shuts tool servers down (SIGTERM) before it scores the rollout, while the
        rollout's state channel is still open: the last chance to run the rubric on the state
        the environment reached. The run's shared HTTP client is closed by then, so each state
        request opens its own.
        """
        env = self.env
        if env is None:
            return
        try:
            if self.started and not self.ledger.over:  # a reset that raised has no episode to end
                self._state_client = None
                await self._with_state(self._end)()
        finally:
            self.env = None
            await env.close()

    async def _end(self) -> None:
        assert self.env is not None
        self._sync(self.ledger.record(await self.env.end(), step=False))

    def register(self, mcp: Any) -> None:
        if self.env is None:
            raise RuntimeError("OmniToolset serves one task's environment; it got no task to set up")
        for spec in self.specs.values():
            mcp.add_tool(self._with_state(self._tool(spec)), name=spec.name, description=spec.description)

    def _tool(self, spec: ToolSpec) -> Any:
        """An ``async def name(**arguments)`` with the tool's signature, for MCP's schema."""

        async def call(**arguments: Any) -> CallToolResult:
            return await self._step(ToolCall(spec.name, arguments))

        hints = typing.get_type_hints(spec.function)
        properties = spec.parameters.get("properties", {})
        parameters = []
        for parameter in list(inspect.signature(spec.function).parameters.values())[1:]:
            hint = hints.get(parameter.name, Any)
            description = properties.get(parameter.name, {}).get("description")
            if description:
                hint = Annotated[hint, Field(description=description)]
            parameters.append(parameter.replace(annotation=hint))
        # CallToolResult: the content goes out as built, with no structured-output wrapper
        call.__signature__ = inspect.Signature(parameters, return_annotation=CallToolResult)  # type: ignore[attr-defined]
        call.__name__ = spec.name
        call.__doc__ = spec.description
        return call

    async def _step(self, call: ToolCall) -> CallToolResult:
        if self.env is None:
            raise RuntimeError("OmniToolset got a tool call before its task was set up")
        if self.ledger.over:
            return _content("The episode is over; no more tool calls are accepted.")
        try:
            result = self.ledger.record(await self.env.step(call))
        except UsageError as exc:
            return _content(exc.message)
        self._sync(result)
        return _content(result)

    def _sync(self, result: StepResult) -> None:
        """Mirror the ledger into the rollout's state, which verifiers carries to the host."""
        state: OmniState = self.state
        ledger = self.ledger
        state.steps, state.reward, state.over = ledger.steps, ledger.reward, ledger.over
        state.done, state.truncated = ledger.done, ledger.truncated
        if "rubric" in result.info:
            state.rubric = {name: float(value) for name, value in result.info["rubric"].items()}
        if ledger.failure is not None:
            state.failure = ledger.failure.to_dict()


def _outlive_sigterm() -> None:
    """Let the server's exit stack unwind after verifiers' SIGTERM.

    uvicorn shuts down gracefully on SIGTERM, then raises the signal again under the handler it
    found; with the default one the process dies right there, before the toolset could end the
    episode. A Python handler that does nothing lets ``serve`` return and the stack unwind.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: None)


def _content(result: StepResult | str) -> CallToolResult:
    """A step's observation as MCP content: its text and its images, in order."""
    if isinstance(result, str):
        return CallToolResult(content=[TextContent(type="text", text=result)])
    blocks: list[TextContent | ImageContent] = []
    for block in result.observation.content:
        if isinstance(block, ImageBlock):
            blocks.append(ImageContent(type="image", data=block.base64, mime_type=block.mime_type))
        elif isinstance(block, TextBlock):
            blocks.append(TextContent(type="text", text=block.text))
    return CallToolResult(content=list(blocks), is_error=result.observation.is_error)


class OmniTaskConfig(vf.TaskConfig):
    pass


class OmniTask(vf.Task[OmniTaskData, OmniState, OmniTaskConfig]):
    """One omnienv task: tools in a per-rollout process, scored from the synced state."""

    @classmethod
    def toolsets(cls, config: OmniTaskConfig) -> list[vf.Toolset]:
        return [OmniToolset(OmniToolsetConfig())]

    @vf.reward(weight=1.0)
    async def episode_reward(self, trace: vf.Trace) -> float:
        """The tools' rewards plus the rubric's final score; raises on infrastructure failure."""
        state: OmniState = trace.state
        if state.failure is not None:
            raise EnvironmentFailure(f"{state.failure['kind']}: {state.failure['message']}")
        return state.reward

    @vf.metric
    async def rubric(self, trace: vf.Trace) -> dict[str, float]:
        """The rubric's parts, as metrics (their weighted sum is already in the reward)."""
        return dict(trace.state.rubric)

    @vf.metric
    async def steps(self, trace: vf.Trace) -> float:
        return float(trace.state.steps)

    @vf.stop
    async def episode_over(self, trace: vf.Trace) -> bool:
        """Stop asking the model once the environment says the episode is over."""
        return bool(trace.state.over)


class OmniTasksetConfig(vf.TasksetConfig):
    env: str = "wordle"
    """The omnienv environment: a registered name or ``package.module:Class``."""
    split: str | None = None
    """The split to draw tasks from; default the environment's first split."""
    seed: int = 0
    """Task ``i`` is reset with seed ``seed + i``."""
    episodes: int = 100
    """How many seeded episodes an environment without splits yields."""
    tasks: list[str] = Field(default_factory=list)
    """Only these task ids of the split, in this order (default: all of them)."""
    task: OmniTaskConfig = OmniTaskConfig()


class OmniTaskset(vf.Taskset[OmniTask, OmniTasksetConfig]):
    """One verifiers task per omnienv task of a split (or per seed, without splits)."""

    def load(self) -> Iterator[OmniTask]:
        config = self.config
        cls = load_environment(config.env)
        split = config.split or (cls.splits[0] if cls.splits else None)
        task_ids: list[str | None] = (
            [task.id for task in cls.task_index().split(split)] if split else [None] * config.episodes
        )
        if config.tasks:
            unknown = sorted(set(config.tasks) - set(task_ids))
            if unknown:
                raise UsageError(f"--env.taskset.tasks: no task {unknown} in {cls.name}'s split {split!r}")
            task_ids = list(config.tasks)
        for i, task_id in enumerate(task_ids):
            seed = config.seed + i
            yield OmniTask(
                OmniTaskData(
                    id=task_id,
                    name=f"{cls.name}/{task_id or seed}",
                    prompt=prompt_text(cls, task_id, seed),
                    env=config.env,
                    task_id=task_id,
                    seed=seed,
                ),
                config.task,
            )


if __name__ == "__main__":
    OmniToolset.run()
