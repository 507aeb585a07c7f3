"""The environment contract: ``reset``, ``step``, ``state``, ``close``, and ``@tool`` methods.

An author subclasses :class:`Environment` (plain methods) or :class:`AsyncEnvironment`
(coroutines) and writes three things:

- ``setup(task, rng)``: start an episode for ``task`` and return the first observation (the
  prompt, as a string, blocks or an :class:`Observation`). ``rng`` is seeded by ``reset(seed=)``.
- ``@tool`` methods: the agent's only actions. Return a string, blocks or a :class:`ToolResult`
  (with ``reward`` and ``done``); raise :class:`ToolError` to answer with an error message.
- optionally ``tasks(split)``, ``rubric``, ``max_turns``, ``state_fields()`` and ``teardown()``.

The framework does the bookkeeping both twins share, in :class:`EnvironmentBase`: task choice,
turn counting and limits, argument validation, error observations for agent mistakes, the
rubric's final reward, and failure flags for crashes. Only the calls into author code differ
between the sync and async classes, and the server reaches both through :func:`as_async`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeAlias

from omnienv.core.content import Block, TextBlock, as_blocks
from omnienv.core.errors import (
    ActionError,
    AgentCausedEnd,
    EnvironmentDefinitionError,
    EnvironmentFailure,
    EpisodeOverError,
    NotResetError,
    TaskError,
)
from omnienv.core.rubric import Rubric, RubricScore
from omnienv.core.tasks import Task
from omnienv.core.tools import ToolSpec, collect_tools, unknown_tool
from omnienv.core.types import Failure, Observation, State, StepResult, ToolCall, ToolResult

__all__ = ["AsyncEnv", "AsyncEnvironment", "Environment", "EnvironmentBase", "as_async"]

logger = logging.getLogger("omnienv")

Prompt: TypeAlias = "str | Block | Iterable[str | Block] | Observation"
ToolOutput: TypeAlias = "str | Block | Iterable[str | Block] | ToolResult"
FAILED_OBSERVATION = Observation.of(
    "The environment failed during this step; the episode is void and will not be scored."
)


@dataclass(slots=True)
class _Episode:
    task: Task | None
    seed: int | None
    id: str | None = None
    step_count: int = 0
    done: bool = False
    truncated: bool = False
    failure: Failure | None = None
    total_reward: float = 0.0
    over: bool = False


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class EnvironmentBase:
    """What sync and async environments share; no I/O and no calls into author code here."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    splits: ClassVar[tuple[str, ...]] = ()
    max_turns: ClassVar[int | None] = None
    rubric: ClassVar[Rubric | None] = None
    blocking: ClassVar[bool] = True
    """False when every call is fast and CPU-light, so servers may run it on the event loop."""
    tools: ClassVar[Mapping[str, ToolSpec]] = {}
    text_actions: ClassVar[Mapping[str, str | None]] = {}
    """Tag grammar for text-only models: ``{"guess": "word"}`` reads ``<guess>X</guess>`` as
    ``guess(word=X)``; None for a tool without arguments. See :mod:`omnienv.core.text_actions`."""

    _episode: _Episode | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__name__ in ("Environment", "AsyncEnvironment"):
            return
        if not cls.__dict__.get("name"):
            cls.name = _snake(cls.__name__)
        if not cls.__dict__.get("description"):
            cls.description = (inspect.getdoc(cls) or "").split("\n\n")[0]
        cls.tools = collect_tools(cls)
        cls._check_definition()

    @classmethod
    def _check_definition(cls) -> None:
        if cls.max_turns is not None and cls.max_turns < 1:
            raise EnvironmentDefinitionError(f"{cls.__name__}.max_turns must be >= 1 or None")
        if cls.rubric is not None and not isinstance(cls.rubric, Rubric):
            raise EnvironmentDefinitionError(f"{cls.__name__}.rubric must be a Rubric")

    # -- tasks --------------------------------------------------------------------------------

    @classmethod
    def tasks(cls, split: str) -> Sequence[Task]:
        """The tasks of one split. Environments without tasks return none."""
        return ()

    @classmethod
    def get_task(cls, split: str, task_id: str) -> Task:
        task = cls._task_index(split)[1].get(task_id)
        if task is None:
            raise TaskError(f"no task '{task_id}' in split '{split}' of {cls.name}")
        return task

    @classmethod
    def _split_tasks(cls, split: str) -> Sequence[Task]:
        return cls._task_index(split)[0]

    @classmethod
    def _task_index(cls, split: str) -> tuple[Sequence[Task], dict[str, Task]]:
        """Tasks are read once per class and split: ``tasks()`` must return the same tasks each call."""
        if split not in cls.splits:
            known = ", ".join(cls.splits) or "none"
            raise TaskError(f"{cls.name} has no split '{split}'; its splits: {known}")
        cache = cls.__dict__.get("_tasks_cache")
        if cache is None:
            cache = {}
            type.__setattr__(cls, "_tasks_cache", cache)
        if split not in cache:
            tasks = list(cls.tasks(split))
            cache[split] = (tasks, {task.id: task for task in tasks})
        return cache[split]  # type: ignore[no-any-return]

    # -- episode bookkeeping ------------------------------------------------------------------

    def _begin_reset(self, task: Task | str | None, seed: int | None) -> tuple[_Episode, random.Random]:
        """The new episode, and its seeded generator (not kept: setup stores it if it needs it)."""
        rng = random.Random(seed)
        if isinstance(task, str):
            split = task.split("/", 1)[0] if "/" in task else (self.splits[0] if self.splits else "")
            task = self.get_task(split, task)
        elif task is None and self.splits:
            candidates = self._task_index(self.splits[0])[0]
            task = rng.choice(candidates) if candidates else None
        return _Episode(task=task, seed=seed), rng

    def _finish_reset(self, episode: _Episode, prompt: Prompt) -> Observation:
        self._episode = episode
        return prompt if isinstance(prompt, Observation) else Observation(as_blocks(prompt))

    def _require_active(self) -> _Episode:
        episode = self._episode
        if episode is None:
            raise NotResetError(f"{self.name}: call reset() before step()")
        if episode.over:
            raise EpisodeOverError(f"{self.name}: the episode is over; call reset() to start another")
        return episode

    def _resolve_call(self, call: ToolCall) -> tuple[ToolSpec, dict[str, Any]]:
        spec = self.tools.get(call.name)
        if spec is None:
            raise unknown_tool(call.name, self.tools)
        return spec, spec.validate(call.arguments)

    def _record(self, episode: _Episode, output: ToolOutput | ActionError | AgentCausedEnd) -> StepResult:
        """Turn what the tool returned (or the agent's mistake) into this step's result."""
        episode.step_count += 1
        if type(output) is ToolResult:
            result = StepResult(Observation(output.content), output.reward, output.done, False, output.info)
        elif type(output) is str:
            result = StepResult(Observation((TextBlock(output),)), 0.0, False, False, {})
        elif isinstance(output, ActionError):
            error = {"code": output.code, "message": output.message}
            result = StepResult(Observation((TextBlock(output.message),), True), 0.0, False, False, {"error": error})
        elif isinstance(output, AgentCausedEnd):
            ended = {"reason": output.reason, "message": output.message}
            result = StepResult(
                Observation((TextBlock(output.message),), True), 0.0, True, False, {"ended_by_agent": ended}
            )
        else:
            result = StepResult(Observation(as_blocks(output)), 0.0, False, False, {})
        limit = self.max_turns
        if not result.done and limit is not None and episode.step_count >= limit:
            result.truncated = True
        episode.done, episode.truncated = result.done, result.truncated
        episode.over = result.done or result.truncated
        episode.total_reward += result.reward
        return result

    def _add_score(self, episode: _Episode, result: StepResult, score: RubricScore) -> StepResult:
        result.reward += score.total
        result.info = {**result.info, "rubric": score.parts}
        episode.total_reward += score.total
        return result

    def _fail(self, episode: _Episode, where: str, exc: BaseException) -> StepResult:
        logger.error("%s: %s failed", self.name, where, exc_info=exc)
        episode.failure = Failure("env_error", f"{where} raised {type(exc).__name__}: {exc}")
        episode.over = True
        return StepResult(FAILED_OBSERVATION, 0.0, False, True, {}, episode.failure)

    def _state(self) -> State:
        episode = self._episode
        if episode is None:
            return State(None, 0)
        if episode.id is None:
            episode.id = str(uuid.uuid4())  # made on demand: most steps never need it
        return State(
            episode.id,
            episode.step_count,
            episode.done,
            episode.truncated or episode.failure is not None,
            episode.task.id if episode.task else None,
            self.state_fields(),
        )

    @classmethod
    def preflight(cls) -> None:
        """Check once, when a server starts, that this machine can run the environment.

        Raise :class:`EnvironmentFailure` naming the fix, and log a warning for any guarantee the
        machine cannot give (a sandbox limit it cannot enforce), so operators see it before the
        first episode rather than in it. The default checks nothing.
        """

    def state_fields(self) -> dict[str, Any]:
        """Extra public fields for ``state()``. Must not reveal the answer."""
        return {}

    @property
    def task(self) -> Task | None:
        return self._episode.task if self._episode else None

    @property
    def episode_reward(self) -> float:
        """The sum of step rewards so far, rubric included once the episode ends."""
        return self._episode.total_reward if self._episode else 0.0

    @property
    def failure(self) -> Failure | None:
        return self._episode.failure if self._episode else None


class Environment(EnvironmentBase):
    """Synchronous environment: ``setup`` and tools are plain methods."""

    @classmethod
    def _check_definition(cls) -> None:
        super()._check_definition()
        for spec in cls.tools.values():
            if spec.is_async:
                raise EnvironmentDefinitionError(
                    f"tool '{spec.name}' of {cls.__name__} is async: subclass AsyncEnvironment instead"
                )
        if cls.rubric is not None and cls.rubric.is_async:
            raise EnvironmentDefinitionError(
                f"{cls.__name__}.rubric has async reward functions: subclass AsyncEnvironment instead"
            )

    def setup(self, task: Task | None, rng: random.Random) -> Prompt:
        """Start an episode and return the prompt. Override this."""
        return self.description

    def teardown(self) -> None:
        """Release what the environment holds (processes, files). Called by ``close``."""

    def state(self) -> State:
        """The infrastructure's view: ids, counters and ``state_fields()``; never the answer."""
        return self._state()

    def reset(self, task: Task | str | None = None, seed: int | None = None) -> Observation:
        episode, rng = self._begin_reset(task, seed)
        try:
            prompt = self.setup(episode.task, rng)
        except Exception as exc:
            raise EnvironmentFailure(f"{self.name}: setup failed: {type(exc).__name__}: {exc}") from exc
        return self._finish_reset(episode, prompt)

    def step(self, call: ToolCall) -> StepResult:
        episode = self._require_active()
        try:
            spec, arguments = self._resolve_call(call)
            output: ToolOutput | ActionError | AgentCausedEnd = spec.function(self, **arguments)
        except (ActionError, AgentCausedEnd) as exc:
            output = exc
        except Exception as exc:
            return self._fail(episode, f"tool '{call.name}'", exc)
        result = self._record(episode, output)
        if self.rubric is not None and (result.done or result.truncated):
            try:
                return self._add_score(episode, result, self.rubric.score(self))
            except Exception as exc:
                return self._fail(episode, "rubric", exc)
        return result

    def close(self) -> None:
        """End the episode and free resources; safe to call more than once."""
        self._episode = None
        self.teardown()


class AsyncEnvironment(EnvironmentBase):
    """Asynchronous environment: ``setup``, ``teardown`` and tools may be coroutines."""

    blocking = False

    async def setup(self, task: Task | None, rng: random.Random) -> Prompt:
        """Start an episode and return the prompt. Override this."""
        return self.description

    async def teardown(self) -> None:
        """Release what the environment holds (processes, files). Called by ``close``."""

    async def state(self) -> State:
        """The infrastructure's view: ids, counters and ``state_fields()``; never the answer."""
        return self._state()

    async def reset(self, task: Task | str | None = None, seed: int | None = None) -> Observation:
        episode, rng = self._begin_reset(task, seed)
        try:
            prompt = await self.setup(episode.task, rng)
        except Exception as exc:
            raise EnvironmentFailure(f"{self.name}: setup failed: {type(exc).__name__}: {exc}") from exc
        return self._finish_reset(episode, prompt)

    async def step(self, call: ToolCall) -> StepResult:
        episode = self._require_active()
        try:
            spec, arguments = self._resolve_call(call)
            output = spec.function(self, **arguments)
            if spec.is_async:
                output = await output
        except (ActionError, AgentCausedEnd) as exc:
            output = exc
        except Exception as exc:
            return self._fail(episode, f"tool '{call.name}'", exc)
        result = self._record(episode, output)
        if self.rubric is not None and (result.done or result.truncated):
            try:
                return self._add_score(episode, result, await self.rubric.ascore(self))
            except Exception as exc:
                return self._fail(episode, "rubric", exc)
        return result

    async def close(self) -> None:
        """End the episode and free resources; safe to call more than once."""
        self._episode = None
        await self.teardown()


class _SyncAsAsync:
    """An :class:`Environment` seen through the async interface, chosen once by ``as_async``.

    Blocking environments run in ``executor`` (the loop's default pool when None) so that one slow
    session never stalls the others; non-blocking ones run inline, which is far cheaper.
    """

    def __init__(self, env: Environment, executor: Executor | None = None) -> None:
        self.env = env
        self.executor = executor
        self.name = env.name
        self.tools = env.tools

    def __repr__(self) -> str:
        return f"as_async({self.env!r})"

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if not self.env.blocking:
            return fn(*args)
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def reset(self, task: Task | str | None = None, seed: int | None = None) -> Observation:
        return await self._call(self.env.reset, task, seed)  # type: ignore[no-any-return]

    async def step(self, call: ToolCall) -> StepResult:
        return await self._call(self.env.step, call)  # type: ignore[no-any-return]

    async def state(self) -> State:
        return self.env.state()

    async def close(self) -> None:
        await self._call(self.env.close)


class AsyncEnv(Protocol):
    """The async face every server and async loop drives; see :func:`as_async`."""

    name: str
    tools: Mapping[str, ToolSpec]

    async def reset(self, task: Task | str | None = None, seed: int | None = None) -> Observation: ...
    async def step(self, call: ToolCall) -> StepResult: ...
    async def state(self) -> State: ...
    async def close(self) -> None: ...


def as_async(env: Environment | AsyncEnvironment, executor: Executor | None = None) -> AsyncEnv:
    """One async face for both twins, so servers and async loops never branch per call."""
    if isinstance(env, AsyncEnvironment):
        return env
    if isinstance(env, Environment):
        return _SyncAsAsync(env, executor)
    raise TypeError(f"expected an Environment or AsyncEnvironment, got {type(env).__name__}")
