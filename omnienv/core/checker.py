"""``check_env``: prove an environment keeps the contract, with messages that name the fix.

The checks drive the async face (:class:`~omnienv.core.env.AsyncEnv`), so the same suite runs on
an in-process environment and, through a client with that face, on any server over the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import inspect
import json
import random
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from omnienv.core.adapters import AsyncEnv, as_async, require_env_factory
from omnienv.core.env import EnvironmentBase
from omnienv.core.errors import EpisodeOverError, NotResetError, OmniEnvError
from omnienv.core.loop_watch import HELD_LIMIT, Yielding, watch_the_loop
from omnienv.core.registry import require_environment_class
from omnienv.core.sampling import sample_arguments
from omnienv.core.split_check import splits_are_disjoint
from omnienv.core.tasks import Task
from omnienv.core.types import Observation, State, StepResult, ToolCall

__all__ = ["CheckReport", "CheckResult", "acheck_env", "check_env"]

EnvFactory = Callable[[], AsyncEnv | Awaitable[AsyncEnv]]
SecretOf = Callable[[AsyncEnv], Any]
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PLAY_LIMIT = 200
MADE_UP_ANSWERS: dict[type, str | int] = {str: "qzxv made-up answer", int: 7_396_418_253}


class CheckFailed(OmniEnvError):
    code = "CHECK_FAILED"


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    passed: bool
    message: str = ""


@dataclass(slots=True)
class CheckReport:
    target: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(result.passed for result in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [result for result in self.results if not result.passed]

    def raise_for_failures(self) -> None:
        if not self.ok:
            lines = "\n".join(f"- {r.name}: {r.message}" for r in self.failures)
            raise CheckFailed(f"{self.target} breaks the environment contract:\n{lines}")


class _Checks:
    def __init__(self, make: EnvFactory, secret_of: SecretOf | None, strings: list[str] | None) -> None:
        self.make = make
        self.secret_of = secret_of
        self.strings = strings
        self.rng = random.Random(0)
        self.opened: list[AsyncEnv] = []

    async def new(self) -> AsyncEnv:
        env = self.make()
        env = await env if isinstance(env, Awaitable) else env
        self.opened.append(env)
        return env

    async def close_all(self) -> None:
        for env in self.opened:
            try:
                await env.close()
            except Exception:  # a broken close is reported by its own check
                pass

    def random_call(self, env: AsyncEnv) -> ToolCall:
        spec = self.rng.choice(list(env.tools.values()))
        return ToolCall(spec.name, sample_arguments(spec.parameters, self.rng, self.strings))

    # -- the checks, each returning a message on failure ---------------------------------------

    async def tools_are_well_formed(self) -> str | None:
        import jsonschema  # optional at import time of core; needed only to check

        env = await self.new()
        if not env.tools:
            return "no tools: mark at least one method with @tool (tools are the agent's only actions)"
        for spec in env.tools.values():
            if not TOOL_NAME.match(spec.name):
                return f"tool name '{spec.name}' must match {TOOL_NAME.pattern} (model APIs reject it)"
            if not spec.description:
                return f"tool '{spec.name}' has no description: give it a docstring"
            if spec.parameters.get("type") != "object":
                return f"tool '{spec.name}': parameters schema must be of type 'object'"
            try:
                jsonschema.Draft202012Validator.check_schema(spec.parameters)
            except jsonschema.SchemaError as exc:
                return f"tool '{spec.name}': invalid JSON Schema: {exc.message}"
        return None

    async def step_before_reset_is_refused(self) -> str | None:
        env = await self.new()
        spec = next(iter(env.tools.values()))
        try:
            await env.step(ToolCall(spec.name, {}))
        except NotResetError:
            return None
        return "step() before reset() must raise NotResetError"

    async def reset_returns_prompt(self) -> str | None:
        env = await self.new()
        observation = await env.reset(seed=1)
        if not isinstance(observation, Observation) or not observation.content:
            return "reset() must return an Observation with at least one content block (the prompt)"
        state = await env.state()
        if state.step_count != 0 or not state.episode_id:
            return f"state() after reset() must have step_count 0 and an episode_id, got {state}"
        return None

    async def seeding_is_deterministic(self) -> str | None:
        first, second = await self.new(), await self.new()
        a, b = await first.reset(seed=123), await second.reset(seed=123)
        if a.to_dict() != b.to_dict() or (await first.state()).task_id != (await second.state()).task_id:
            return "reset(seed=123) twice gave different prompts or tasks: draw randomness from setup's rng"
        return None

    async def agent_mistakes_are_observations(self) -> str | None:
        env = await self.new()
        await env.reset(seed=2)
        result = await env.step(ToolCall("__no_such_tool__", {}))
        if not result.observation.is_error or result.info.get("error", {}).get("code") != "UNKNOWN_TOOL":
            return "an unknown tool must give an error observation (code UNKNOWN_TOOL), not raise"
        if result.over:
            await env.reset(seed=2)
        spec = next(iter(env.tools.values()))
        result = await env.step(ToolCall(spec.name, {"__bogus_argument__": 1}))
        if not result.observation.is_error or "__bogus_argument__" not in result.observation.text:
            return "invalid arguments must give an error observation that names the bad argument"
        return None

    async def results_survive_json(self) -> str | None:
        env = await self.new()
        await env.reset(seed=3)
        result = await env.step(self.random_call(env))
        try:
            wire = json.loads(json.dumps(result.to_dict()))
        except (TypeError, ValueError) as exc:
            return f"step results must be JSON-serialisable (check info and state fields): {exc}"
        if StepResult.from_dict(wire).to_dict() != result.to_dict():
            return "a step result changed after a JSON round trip: keep info to plain JSON values"
        try:
            json.dumps((await env.state()).to_dict())
        except (TypeError, ValueError) as exc:
            return f"state() must be JSON-serialisable: keep state_fields() to plain JSON values ({exc})"
        return None

    async def episodes_end_and_stay_ended(self) -> str | None:
        env = await self.new()
        await env.reset(seed=4)
        secret = self.secret_of(env) if self.secret_of else None
        for _ in range(PLAY_LIMIT):
            result = await env.step(self.random_call(env))
            if result.failure is not None:
                return f"a step failed with {result.failure.kind}: {result.failure.message}"
            if secret is not None and not result.over:
                leak = await _leaks(str(secret), result.observation, result.info, env)
                if leak:
                    return f"the answer appears in the {leak} before the episode ended"
            if result.over:
                break
        else:
            return f"no episode ended within {PLAY_LIMIT} random steps: set max_turns"
        try:
            await env.step(self.random_call(env))
        except EpisodeOverError:
            return None
        return "step() after the episode ended must raise EpisodeOverError"

    async def reset_starts_afresh(self) -> str | None:
        played, fresh = await self.new(), await self.new()
        await played.reset(seed=9)
        for _ in range(3):
            if (await played.step(self.random_call(played))).over:
                break
        again, first = await played.reset(seed=8), await fresh.reset(seed=8)
        if again.to_dict() != first.to_dict() or _start(await played.state()) != _start(await fresh.state()):
            return (
                "reset() after an episode started differently from reset() on a new instance with the same seed: "
                "set every episode field in setup, not in __init__ or on the class"
            )
        return None

    async def sessions_are_isolated(self) -> str | None:
        first, second = await self.new(), await self.new()
        await first.reset(seed=5)
        await second.reset(seed=6)
        before = json.dumps((await second.state()).to_dict(), sort_keys=True)
        await first.step(self.random_call(first))
        if json.dumps((await second.state()).to_dict(), sort_keys=True) != before:
            return "stepping one instance changed another's state: keep episode state on self, not the class"
        return None

    async def close_is_idempotent(self) -> str | None:
        env = await self.new()
        await env.reset(seed=7)
        await env.close()
        await env.close()
        try:
            await env.step(self.random_call(env))
        except NotResetError:
            return None
        return "step() after close() must raise NotResetError"


def tasks_are_stable(env_class: type[EnvironmentBase]) -> str | None:
    """The in-process check of ``tasks(split)``: what the task index assumes, and what a server's
    workers rely on (each reads the tasks itself, and a task id must name the same task in all)."""
    found = 0
    for split in env_class.splits:
        tasks = env_class.task_index().split(split)  # the copy every reset reads, and the other checks
        if _task_keys(tasks) != _task_keys(env_class.tasks(split)):
            return f"tasks('{split}') gave different tasks on a second call: build them from a fixed seed"
        ids: set[str] = set()
        for task in tasks:
            if task.split != split:
                return f"task '{task.id}' is listed in split '{split}' but says split='{task.split}'"
            if task.id in ids:
                return f"task id '{task.id}' appears twice in split '{split}': give every task its own id"
            ids.add(task.id)
        found += len(tasks)
    if env_class.splits and not found:
        return f"splits {env_class.splits} are declared but tasks() returns none: define the classmethod tasks(split)"
    return None


def _task_keys(tasks: Iterable[Task]) -> list[str]:
    return [json.dumps(task.to_dict(include_answer=True), sort_keys=True, default=repr) for task in tasks]


async def _leaks(secret: str, observation: Observation, info: dict[str, Any], env: AsyncEnv) -> str | None:
    if len(secret) < 3:
        return None
    needle = secret.lower()
    if needle in observation.text.lower():
        return "observation"
    if any(needle in text.lower() for text in _strings(info)):
        return "info"
    if any(needle in text.lower() for text in _strings((await env.state()).fields)):
        return "state"
    return None


def _start(state: State) -> str:
    """A state at the start of an episode, less its episode id (new for every episode)."""
    return json.dumps([state.step_count, state.task_id, state.fields], sort_keys=True, default=repr)


def _strings(value: Any) -> list[str]:
    """Every string in a JSON-like value, keys included (JSON's own words are not leaks)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value.keys(), *(s for v in value.values() for s in _strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return [str(value)] if isinstance(value, int | float) and not isinstance(value, bool) else []


CHECKS = [
    name for name in vars(_Checks) if not name.startswith("_") and name not in ("new", "close_all", "random_call")
]


async def acheck_env(
    make: EnvFactory,
    *,
    target: str = "environment",
    secret_of: SecretOf | None = None,
    strings: list[str] | None = None,
) -> CheckReport:
    """Run every check on fresh environments from ``make``; never raises for a failed check."""
    require_env_factory(make, "acheck_env", "make")
    checks = _Checks(make, secret_of, strings)
    report = CheckReport(target)
    try:
        for name in CHECKS:
            try:
                message = await getattr(checks, name)()
            except Exception as exc:
                message = f"raised {type(exc).__name__}: {exc}"
            report.results.append(CheckResult(name, message is None, message or ""))
    finally:
        await checks.close_all()
    return report


async def prompt_hides_the_answer(env_class: type[EnvironmentBase]) -> str | None:
    """The in-process check of ``setup``: a task whose answer is swapped for a made-up one starts an
    episode whose prompt and state must not show it (naming every option, the answer among them, is
    fine: the made-up answer is none of them)."""
    task = env_class.task_index().draw(4)
    if task is None or type(task.answer) not in MADE_UP_ANSWERS:
        return None
    made_up = MADE_UP_ANSWERS[type(task.answer)]
    env = as_async(env_class())
    try:
        try:
            prompt = await env.reset(task=dataclasses.replace(task, answer=made_up))
        except Exception:  # setup needs a real answer (a word from its list): nothing to tell
            return None
        leak = await _leaks(str(made_up), prompt, {}, env)
    finally:
        await env.close()
    if leak is None:
        return None
    where = "prompt" if leak == "observation" else leak
    return f"setup puts Task.answer in the {where} before the agent's first call: leave it out of both"


async def _in_process(env_class: type[EnvironmentBase]) -> list[CheckResult]:
    results = []
    for check in (tasks_are_stable, splits_are_disjoint, prompt_hides_the_answer):
        try:
            outcome = check(env_class)
            message = await outcome if inspect.isawaitable(outcome) else outcome
        except Exception as exc:
            message = f"raised {type(exc).__name__}: {exc}"
        results.append(CheckResult(check.__name__, message is None, message or ""))
    return results


def check_env(env_class: type[EnvironmentBase], *, strings: list[str] | None = None) -> CheckReport:
    """Check an environment class in-process: the checks :func:`acheck_env` runs over the wire,
    the answer-leak check, and what only the class shows (:func:`tasks_are_stable`,
    :func:`~omnienv.core.split_check.splits_are_disjoint`, :func:`prompt_hides_the_answer`). Text
    arguments come from ``strings``, else from the class's own :meth:`~EnvironmentBase.random_strings`."""
    require_environment_class(env_class, "check_env")
    if strings is None:
        vocabulary = env_class.random_strings()
        strings = list(vocabulary) if vocabulary is not None else None

    def secret_of(env: Any) -> Any:
        inner = getattr(env, "env", env)
        return inner.task.answer if inner.task is not None else None

    async def run() -> CheckReport:
        import jsonschema  # noqa: F401  # imported before the watch starts: its import is not the env's

        for spec in env_class.tools.values():  # omnienv's own one-time work, built lazily at a first wrong call
            if spec.declared and spec.arguments_model is None:
                spec._build_model()
        with contextlib.suppress(Exception):  # read off the loop as a server starts; a failure shows in the checks
            env_class.task_index().load()
        longest = [0.0]
        watch = asyncio.create_task(watch_the_loop(longest))
        collecting = gc.isenabled()
        gc.disable()  # a collection's pause is the process's (a test run's whole heap), not the environment's
        try:
            report = await acheck_env(
                lambda: Yielding(as_async(env_class())), target=env_class.name, secret_of=secret_of, strings=strings
            )
        finally:
            watch.cancel()
            if collecting:
                gc.enable()
        report.results[:0] = await _in_process(env_class)
        held = f"a call held the event loop for {longest[0]:.1f} s, and with it every other session of a server"
        fix = "await omnienv.core.threads.to_blocking_thread(...) for blocking work, or leave blocking = True"
        message = f"{held}: {fix}" if longest[0] > HELD_LIMIT else ""
        report.results.append(CheckResult("calls_leave_the_event_loop_free", not message, message))
        return report

    return asyncio.run(run())
