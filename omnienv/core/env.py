"""The environment contract: ``reset``, ``step``, ``state``, ``close``, and ``@tool`` methods.

An author subclasses :class:`Environment` (plain methods) or :class:`AsyncEnvironment`
(coroutines) and writes three things:

- ``setup(task, rng)``: start an episode for ``task`` and return the first observation (the
  prompt, as a string, blocks or an :class:`Observation`). ``rng`` is seeded by ``reset(seed=)``.
- ``@tool`` methods: the agent's only actions. Return a string, blocks or a :class:`ToolResult`
  (with ``reward`` and ``done``); raise :class:`ToolError` to answer with an error message.
- optionally ``tasks(split)``, ``rubric``, ``max_turns``, ``state_fields()`` and ``teardown()``.

The framework does the bookkeeping both twins share, in :class:`EnvironmentBase` (task choice,
argument validation, the rubric's final reward, failure flags for crashes) and
:func:`~omnienv.core.results.record_step` (turn counting and limits, error observations for agent
mistakes). Only the calls into author code differ between the sync and async classes;
:mod:`omnienv.core.adapters` gives each the other's face.
"""

from __future__ import annotations

import inspect
import logging
import random
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, NoReturn, TypeAlias

from omnienv.core.content import Block, as_blocks
from omnienv.core.definition import check_definition
from omnienv.core.errors import (
    ActionError,
    AgentCausedEnd,
    EnvironmentFailure,
    EpisodeOverError,
    NotResetError,
    TaskError,
)
from omnienv.core.ledger import EpisodeLedger
from omnienv.core.results import ToolOutput, record_step
from omnienv.core.rubric import Rubric
from omnienv.core.seeding import seeded
from omnienv.core.tasks import Task, TaskIndex
from omnienv.core.text import bounded_error
from omnienv.core.tools import ToolSpec, collect_tools, unknown_tool
from omnienv.core.types import Failure, Observation, State, StepResult, ToolCall, episode_over, require_tool_call

__all__ = ["AsyncEnvironment", "Environment", "EnvironmentBase"]

logger = logging.getLogger("omnienv")

Prompt: TypeAlias = "str | Block | Iterable[str | Block] | Observation"
FAILED_OBSERVATION = Observation.of(
    "The environment failed during this step; the episode is void and will not be scored.", is_error=True
)


def _observation(prompt: Prompt) -> Observation:
    return prompt if isinstance(prompt, Observation) else Observation(as_blocks(prompt))


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

    shows_images: ClassVar[bool] = False
    """True when tools return images (a desktop's screenshots): dialects whose observation shape
    is fixed before the first step (Gymnasium's spaces) choose a multimodal one."""
    tools: ClassVar[Mapping[str, ToolSpec]] = {}
    text_actions: ClassVar[Mapping[str, str | None]] = {}
    """Tag grammar for text-only models: ``{"guess": "word"}`` reads ``<guess>X</guess>`` as
    ``guess(word=X)``; None for a tool without arguments. See :mod:`omnienv.core.text_actions`."""

    extras: ClassVar[tuple[str, ...]] = ()
    system_packages: ClassVar[tuple[str, ...]] = ()
    """What a machine or an image needs to run it: omnienv extras (``pip install 'omnienv[jupyter]'``)
    and Debian packages (bubblewrap, Xvfb...); ``omnienv build`` installs both into the image."""

    policies: ClassVar[Mapping[str, str]] = {}
    """Built-in players by name, as ``"module:Class"`` (classes taking no arguments): the scripted
    solvers that prove the tasks solvable, found through the environment by ``omnienv eval``."""

    _episode: EpisodeLedger | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__name__ in ("Environment", "AsyncEnvironment"):
            return
        if not cls.__dict__.get("name"):
            cls.name = _snake(cls.__name__)
        if not cls.__dict__.get("description"):
            cls.description = (inspect.getdoc(cls) or "").split("\n\n")[0]
        cls.tools = collect_tools(cls)
        check_definition(cls, is_async=issubclass(cls, AsyncEnvironment), contract=_CONTRACT)

    # -- tasks --------------------------------------------------------------------------------

    @classmethod
    def tasks(cls, split: str) -> Sequence[Task]:
        """The tasks of one split, the same each call. Environments without tasks return none."""
        return ()

    @classmethod
    def task_index(cls) -> TaskIndex:
        """The class's tasks by split, read once: every caller finds and draws tasks through it."""
        index: TaskIndex | None = cls.__dict__.get("_task_index_cache")
        if index is None:
            index = TaskIndex(cls.name, cls.splits, cls.tasks)
            type.__setattr__(cls, "_task_index_cache", index)
        return index

    @classmethod
    def random_strings(cls) -> Sequence[str] | None:
        """Strings random baselines and the checker draw text arguments from (Wordle: its word
        list), so a random call is a plausible one; None draws random letters."""
        return None

    # -- episode bookkeeping ------------------------------------------------------------------

    def _begin_reset(
        self, task: Task | str | None, seed: int | None, split: str | None
    ) -> tuple[EpisodeLedger, random.Random]:
        """The new episode, and the generator ``setup`` draws from: seeded by ``seed`` alone, so a
        task named or drawn, in-process or through any server, starts the same episode."""
        chosen = self.task_index().choose(task, seed, split)
        return EpisodeLedger(task=chosen, seed=seed), seeded(seed)

    def render_prompt(self, task: Task | None, rng: random.Random) -> Prompt | None:
        """The prompt ``setup`` would return for ``task`` and ``rng``, computed without starting
        anything (no kernel, no display), or None when only a real reset can tell.

        Override it when the prompt follows from the task alone, so datasets (Verifiers, SkyRL Gym,
        NeMo Gym rows) need no sandbox per row; ``rng`` is seeded as ``setup``'s is, so the two agree
        (and the test suite checks that they do).
        """
        return None

    def preview(
        self, task: Task | str | None = None, seed: int | None = None, split: str | None = None
    ) -> Observation | None:
        """The first observation ``reset`` would give, without starting the episode; None when the
        environment cannot know it without one (see :meth:`render_prompt`)."""
        chosen = self.task_index().choose(task, seed, split)
        prompt = self.render_prompt(chosen, random.Random(seed))
        return None if prompt is None else _observation(prompt)

    def _setup_failed(self, exc: Exception) -> EnvironmentFailure:
        """The error of a reset whose ``setup`` raised. The previous episode ends with it: ``setup``
        may have changed the environment halfway, so a step must not go on with the old episode
        (it would be played, and scored, on the half-reset state); the next step asks for a reset.
        A :class:`TaskError` (``setup`` refusing a task it cannot run) is the caller's, raised as it is."""
        self._episode = None
        if isinstance(exc, TaskError):
            raise exc
        return EnvironmentFailure(bounded_error(f"{self.name}: setup failed: {type(exc).__name__}: {exc}"))

    def _finish_reset(self, episode: EpisodeLedger, prompt: Prompt) -> Observation:
        self._episode = episode
        return _observation(prompt)

    def _require_active(self) -> EpisodeLedger:
        episode = self._require_episode()
        if episode.over:
            raise EpisodeOverError(f"{self.name}: the episode is over; call reset() to start another")
        return episode

    def _require_episode(self) -> EpisodeLedger:
        episode = self._episode
        if episode is None:
            raise NotResetError(f"{self.name}: call reset() before step()")
        return episode

    def _refuse_unknown(self, call: ToolCall) -> NoReturn:
        """An unknown name, one that is not a string included (a model's JSON, ``ToolCall(None)``),
        is the agent's mistake, which it reads, never a failure that voids the episode. A step of a
        known tool pays for none of this: it runs only once the plain lookup failed."""
        raise unknown_tool(str(call.name), self.tools)

    def _begin_end(self) -> tuple[EpisodeLedger, StepResult | None]:
        """The episode to cut short now, or the (empty) result when it is already over."""
        episode = self._require_episode()
        if episode.over:
            return episode, StepResult(Observation(()), 0.0, episode.done, episode.truncated, {}, episode.failure)
        episode.truncated = True
        return episode, None

    def _cut_result(self) -> StepResult:
        return StepResult(Observation(()), 0.0, False, True, {"ended_by": "trainer"})

    def _fail(self, episode: EpisodeLedger, where: str, exc: BaseException) -> StepResult:
        logger.error("%s: %s failed", self.name, where, exc_info=exc)
        episode.fail(Failure.from_exception(where, exc))
        return StepResult(FAILED_OBSERVATION, 0.0, False, True, {}, episode.failure)

    def _state(self) -> State:
        episode = self._episode
        if episode is None:
            return State(None, 0)
        if episode.id is None:
            episode.id = str(uuid.uuid4())  # made on demand: most steps never need it
        return State(
            episode.id,
            episode.steps,
            episode.done,
            episode.truncated or episode.failure is not None,
            episode.task.id if episode.task else None,
            self.state_fields(),
            episode.final_reward,
            episode.failure,
        )

    @classmethod
    def step_seconds(cls) -> float | None:
        """The longest a step may rightly take, in seconds, where the agent sets it (a command's own
        timeout) or a grader takes it (a verifier's), or a reset (a task's build): a server's step
        deadline, which bounds resets too, is never shorter, or the agent could void a losing
        episode by outlasting it (and a slow task would fail every reset). None: the server's
        deadline alone."""
        return None

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
        return self._episode.reward if self._episode else 0.0

    @property
    def episode(self) -> EpisodeLedger | None:
        """The current episode's ledger (None before the first reset)."""
        return self._episode

    @property
    def failure(self) -> Failure | None:
        return self._episode.failure if self._episode else None


class Environment(EnvironmentBase):
    """Synchronous environment: ``setup`` and tools are plain methods."""

    def setup(self, task: Task | None, rng: random.Random) -> Prompt:
        """Start an episode and return the prompt. Override this."""
        return self.description

    def teardown(self) -> None:
        """Release what the environment holds (processes, files). Called by ``close``."""

    def state(self) -> State:
        """The infrastructure's view: ids, counters and ``state_fields()``; never the answer."""
        return self._state()

    def reset(self, task: Task | str | None = None, seed: int | None = None, split: str | None = None) -> Observation:
        """Start an episode on ``task`` (a Task or its id), or on the task ``seed`` draws from
        ``split`` (default: the first split)."""
        episode, rng = self._begin_reset(task, seed, split)
        try:
            prompt = self.setup(episode.task, rng)
        except Exception as exc:
            raise self._setup_failed(exc) from exc
        return self._finish_reset(episode, prompt)

    def step(self, call: ToolCall) -> StepResult:
        episode = self._episode
        if episode is None or episode_over(episode):
            episode = self._require_active()  # raises the error that names the fix
        try:
            spec: ToolSpec | None = self.tools[call.name]
        except Exception:  # no tool of that name, a name that is not a string, or no ToolCall at all
            require_tool_call(call, self.name, self.tools)  # the caller's UsageError; the episode goes on
            spec = None
        try:
            output: ToolOutput | ActionError | AgentCausedEnd = (
                spec.invoke(self, call.arguments) if spec is not None else self._refuse_unknown(call)
            )
        except (ActionError, AgentCausedEnd) as exc:
            output = exc
        except Exception as exc:
            return self._fail(episode, f"tool '{call.name}'", exc)
        try:
            result = record_step(episode, output, self.max_turns)
        except Exception as exc:  # what the tool returned cannot be a result (a reward of NaN)
            return self._fail(episode, f"tool '{call.name}'", exc)
        return self._score(episode, result) if result.done or result.truncated else result

    def end(self) -> StepResult:
        """End the episode now, as a trainer does at its turn budget, and score it with the rubric.

        Returns the last result: no observation, ``truncated`` set, the rubric's score as the
        reward. An episode already over is left as it is (a reward of 0 is returned).
        """
        episode, over = self._begin_end()
        return over if over is not None else self._score(episode, self._cut_result())

    def _score(self, episode: EpisodeLedger, result: StepResult) -> StepResult:
        """``result``, which ended the episode, with the rubric's final reward added (a failed
        episode is masked, never scored)."""
        rubric = self.rubric
        if rubric is None or result.failure is not None:
            return result
        try:
            score = rubric.score(self)
            return episode.add_final(result, score.total, score.parts)
        except Exception as exc:
            return self._fail(episode, "rubric", exc)

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

    async def reset(
        self, task: Task | str | None = None, seed: int | None = None, split: str | None = None
    ) -> Observation:
        """Start an episode on ``task`` (a Task or its id), or on the task ``seed`` draws from
        ``split`` (default: the first split)."""
        episode, rng = self._begin_reset(task, seed, split)
        try:
            prompt = await self.setup(episode.task, rng)
        except Exception as exc:
            raise self._setup_failed(exc) from exc
        return self._finish_reset(episode, prompt)

    async def step(self, call: ToolCall) -> StepResult:
        episode = self._require_active()
        try:
            spec: ToolSpec | None = self.tools[call.name]
        except Exception:  # no tool of that name, a name that is not a string, or no ToolCall at all
            require_tool_call(call, self.name, self.tools)  # the caller's UsageError; the episode goes on
            spec = None
        try:
            if spec is None:
                self._refuse_unknown(call)
            output = spec.invoke(self, call.arguments)
            if spec.is_async:
                output = await output
        except (ActionError, AgentCausedEnd) as exc:
            output = exc
        except Exception as exc:
            return self._fail(episode, f"tool '{call.name}'", exc)
        try:
            result = record_step(episode, output, self.max_turns)
        except Exception as exc:  # what the tool returned cannot be a result (a reward of NaN)
            return self._fail(episode, f"tool '{call.name}'", exc)
        return await self._score(episode, result) if result.done or result.truncated else result

    async def end(self) -> StepResult:
        """End the episode now, as a trainer does at its turn budget, and score it with the rubric.

        Returns the last result: no observation, ``truncated`` set, the rubric's score as the
        reward. An episode already over is left as it is (a reward of 0 is returned).
        """
        episode, over = self._begin_end()
        return over if over is not None else await self._score(episode, self._cut_result())

    async def _score(self, episode: EpisodeLedger, result: StepResult) -> StepResult:
        rubric = self.rubric
        if rubric is None or result.failure is not None:
            return result
        try:
            score = await rubric.ascore(self)
            return episode.add_final(result, score.total, score.parts)
        except Exception as exc:
            return self._fail(episode, "rubric", exc)

    async def close(self) -> None:
        """End the episode and free resources; safe to call more than once."""
        self._episode = None
        await self.teardown()


_CONTRACT = frozenset(
    name for twin in (EnvironmentBase, Environment, AsyncEnvironment) for name in vars(twin) if not name.startswith("_")
)
"""The framework's own methods and settings: a tool method of one of these names would replace it."""
