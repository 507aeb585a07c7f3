"""A classic Verifiers environment (``load_environment()`` returning a ``vf.Environment``:
``SingleTurnEnv``, ``MultiTurnEnv``, ``ToolEnv``, ``StatefulToolEnv``...) as an omnienv environment.

The environment's own ``rollout()`` runs unchanged, one per episode, with omnienv's agent as its
model: the rollout's client (:class:`AgentClient`) hands each model request to the episode and
waits for the agent's next action, which it answers as the model's message. So everything the
environment does between two model calls (``setup_state``, ``env_response``, tools and
``update_tool_args``, stop conditions, ``final_env_response``, cleanup) is its own code, run in
its own order:

- **tasks**: the rows of ``dataset`` (split ``train``) and ``eval_dataset`` (split ``eval``); a
  row's ``answer`` is the task's hidden answer;
- **tools**: the environment's ``tool_defs`` (a ``ToolEnv``'s Python functions, with their
  schemas), a call being an assistant message with that one tool call; plus ``answer(text)``, a
  message without a tool call: in a single-turn or tool environment it is the final answer, which
  ends the rollout; a plain ``MultiTurnEnv`` gets ``reply(text)``, one turn of the conversation;
- **observations**: the prompt's messages at reset, and after each action the messages the
  environment added (tool results, its reply, its ``final_env_response``);
- **reward**: the environment's rubric (``rubric.score_rollout``) once the rollout ends, or when
  the episode is cut short (``end()``: the pending model call is refused, the rollout ends and
  is scored on the state reached);
- **failures**: an exception escaping the rollout, an error verifiers records on the state
  (``state["error"]``: a tool in ``stop_errors``, a failed parse, its own ``InfraError``...) and
  a reward function that raises (which verifiers itself would score 0) are infrastructure
  failures, flagged, never a reward. A tool that raises otherwise is what verifiers shows the
  model: its error text, an ordinary observation.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import random
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import verifiers as vf
from verifiers.clients import Client
from verifiers.types import AssistantMessage, Response, ResponseMessage
from verifiers.types import ToolCall as VfToolCall

from omnienv.catalog._foreign import foreign_reward
from omnienv.catalog._schema_tool import add_tool, schema_tool
from omnienv.catalog._verifiers_messages import after_last_reply, blocks
from omnienv.core import AsyncEnvironment, Block, EnvironmentFailure, Rubric, Task, TextBlock, ToolResult, ToolSpec

__all__ = ["AgentClient", "ClassicVerifiersEnv", "environment"]

MODEL = "omnienv-agent"
DEFAULT_MAX_TURNS = 50
"""For environments without a turn limit of their own (``max_turns=-1``)."""
_RAISED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("omnienv_vf_raised", default=None)
"""The reward functions that raised during one ``score_rollout`` (set around it)."""


class _Cut(Exception):
    """Raised in the rollout by its pending model call when the episode is cut short."""


class AgentClient(Client):
    """The rollout's model client: each request is answered by the episode's next action."""

    async def get_response(self, prompt: Any, model: str, sampling_args: Any, tools: Any = None, **kwargs: Any) -> Any:
        rollout: Rollout = self.client
        return await rollout.ask(prompt, kwargs.get("state"))

    def setup_client(self, config: Any) -> Any:
        raise NotImplementedError("the agent's client is made by omnienv, not from a config")

    async def to_native_tool(self, tool: Any) -> Any:
        return tool

    async def to_native_prompt(self, messages: Any) -> tuple[Any, dict[str, Any]]:
        return messages, {}

    async def get_native_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("get_response answers directly")

    async def raise_from_native_response(self, response: Any) -> None:
        return None

    async def from_native_response(self, response: Any) -> Any:
        return response

    async def close(self) -> None:
        return None


class Rollout:
    """One episode: the environment's ``rollout()`` as a task, and the model call it waits on."""

    def __init__(self, vf_env: Any, row: dict[str, Any]) -> None:
        self.vf_env = vf_env
        self.row = row
        self.state: Any = None
        self.asks: asyncio.Queue[tuple[list[Any], asyncio.Future[Any]]] = asyncio.Queue()
        self.pending: asyncio.Future[Any] | None = None
        self.task: asyncio.Task[Any] | None = None

    async def _run(self) -> Any:
        try:
            self.state = await self.vf_env.rollout(self.row, AgentClient(self), MODEL, None)
        except _Cut:
            pass  # cut short: the state captured at the last model call is the one scored
        return self.state

    async def ask(self, prompt: list[Any], state: Any) -> Any:
        """Called by the rollout: hand over the conversation, wait for the agent's message."""
        self.state = state
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self.asks.put((list(prompt), reply))
        return await reply

    async def start(self) -> list[Any] | None:
        """Start the rollout; the conversation at its first model call (None: it ended first)."""
        self.task = asyncio.create_task(self._run())
        return await self._next()

    async def _next(self) -> list[Any] | None:
        """The conversation at the rollout's next model call, or None once it is over (raising
        what escaped it)."""
        assert self.task is not None
        getter = asyncio.ensure_future(self.asks.get())
        done, _ = await asyncio.wait({getter, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            prompt, self.pending = getter.result()
            return prompt
        getter.cancel()
        self.task.result()
        return None

    async def act(self, message: AssistantMessage) -> list[Any] | None:
        """Answer the pending model call with ``message``; what follows, as :meth:`_next`."""
        pending, self.pending = self.pending, None
        if pending is not None and not pending.done():  # a rollout timeout may have cancelled it
            pending.set_result(_response(message))
        return await self._next()

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    async def cut(self) -> None:
        """End the rollout now: its pending model call raises, its cleanup runs."""
        pending, self.pending = self.pending, None
        if pending is not None and not pending.done():
            pending.set_exception(_Cut())
        if self.task is not None:
            await asyncio.wait({self.task})

    async def cancel(self) -> None:
        """Stop the rollout without scoring it (the episode was closed or reset)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.task is not None:
            with contextlib.suppress(BaseException):
                await self.task


def _response(message: AssistantMessage) -> Response:
    calls = message.tool_calls or None
    reply = ResponseMessage(
        content=message.content,
        tool_calls=calls,
        finish_reason="tool_calls" if calls else "stop",
        is_truncated=False,
    )
    return Response(id=f"omnienv-{uuid.uuid4().hex}", created=int(time.time()), model=MODEL, message=reply)


def _watched(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` recording its exceptions in :data:`_RAISED`, same signature (verifiers reads it)."""

    @functools.wraps(function)
    async def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            value = function(*args, **kwargs)
            return await value if inspect.isawaitable(value) else value
        except Exception as exc:
            raised = _RAISED.get()
            if raised is not None:
                raised.append(f"{name}: {type(exc).__name__}: {exc}")
            raise

    watched.__omnienv_watched__ = True  # type: ignore[attr-defined]
    return watched


def watch_rubric(rubric: Any) -> None:
    """Wrap every reward function of ``rubric`` (and of the rubrics it groups) with :func:`_watched`."""
    for inner in getattr(rubric, "rubrics", None) or ():
        watch_rubric(inner)
    functions = getattr(rubric, "funcs", None)
    if isinstance(functions, list):
        for index, function in enumerate(functions):
            if not getattr(function, "__omnienv_watched__", False):
                functions[index] = _watched(getattr(function, "__name__", f"reward_{index}"), function)


async def verifiers_reward(env: ClassicVerifiersEnv) -> float:
    """The environment's rubric on the finished (or cut-short) rollout."""
    return await env.score()


class ClassicVerifiersEnv(AsyncEnvironment):
    """A classic Verifiers environment's rollouts as episodes; subclasses are made per module."""

    extras = ("verifiers",)
    rubric = Rubric(verifiers_reward)
    vf_env: ClassVar[Any] = None
    datasets: ClassVar[dict[str, Any]] = {}
    reply_tool: ClassVar[str] = "answer"
    _rollout: Rollout | None = None

    @classmethod
    def tasks(cls, split: str) -> Sequence[Task]:
        dataset = cls.datasets.get(split)
        if dataset is None:
            return ()
        answers = dataset["answer"] if "answer" in dataset.column_names else [None] * len(dataset)
        return [Task(f"{split}/{i:05d}", split, {"index": i}, answer) for i, answer in enumerate(answers)]

    async def setup(self, task: Task | None, rng: random.Random) -> Sequence[Block] | str:
        await self._drop()
        assert task is not None  # every classic environment has a dataset, so a split
        row = dict(self.datasets[task.split][int(task.data["index"])])
        self._rollout = Rollout(self.vf_env, row)
        prompt = await self._rollout.start()
        if prompt is None:
            self._raise_for_error()
            return "The environment ended the episode before the first turn."
        return blocks(prompt) or "(an empty prompt)"

    async def act(self, message: AssistantMessage) -> ToolResult:
        """Send the agent's ``message`` as the model's; what the environment answered."""
        rollout = self._rollout
        if rollout is None or not rollout.running:
            raise EnvironmentFailure(f"{self.name}: the rollout is not running")
        prompt = await rollout.act(message)
        if prompt is not None:
            return ToolResult(blocks(after_last_reply(prompt)) or (TextBlock("(no reply)"),))
        self._raise_for_error()
        final = rollout.state.get("final_env_response") if rollout.state is not None else None
        content = blocks(final) if final else ()
        stop = rollout.state.get("stop_condition") if rollout.state is not None else None
        return ToolResult(content or (TextBlock("The episode is over."),), 0.0, True, {"stop_condition": stop})

    def _raise_for_error(self) -> None:
        state = self._rollout.state if self._rollout is not None else None
        error = state.get("error") if state is not None else None
        if error is not None:
            said = f": {error}" if str(error) else ""
            cause = getattr(error, "__cause__", None)
            why = f", caused by {type(cause).__name__}: {cause}" if cause is not None else ""
            raise EnvironmentFailure(f"verifiers stopped the rollout on {type(error).__name__}{said}{why}")

    async def score(self) -> float:
        """Score the rollout with the environment's rubric, ending it first if it still runs."""
        rollout = self._rollout
        if rollout is None:
            raise EnvironmentFailure(f"{self.name}: no rollout to score")
        if rollout.running:
            await rollout.cut()
        if rollout.task is not None:
            rollout.task.result()  # what escaped the rollout while it ended is a failure too
        self._raise_for_error()
        if rollout.state is None:
            raise EnvironmentFailure(f"{self.name}: the rollout ended before its first model call")
        raised: list[str] = []
        token = _RAISED.set(raised)
        try:
            await self.vf_env.rubric.score_rollout(rollout.state)
        finally:
            _RAISED.reset(token)
        if raised:
            raise EnvironmentFailure(f"the rubric's reward functions raised: {'; '.join(raised)}")
        await self.vf_env.rubric.cleanup(rollout.state)
        return foreign_reward(rollout.state["reward"], "the verifiers rubric")

    def state_fields(self) -> dict[str, Any]:
        """The rubric's per-function scores once the rollout is scored (verifiers' ``metrics``)."""
        state = self._rollout.state if self._rollout is not None else None
        metrics = state.get("metrics") if state is not None and self.failure is None else None
        return {"metrics": dict(metrics)} if metrics else {}

    async def _drop(self) -> None:
        rollout, self._rollout = self._rollout, None
        if rollout is not None:
            await rollout.cancel()

    async def teardown(self) -> None:
        await self._drop()


def _tool_specs(vf_env: Any, reply_tool: str, final: bool) -> dict[str, ToolSpec]:
    """One tool per ``tool_defs`` entry, and the plain message (``answer``/``reply``)."""
    specs: dict[str, ToolSpec] = {}
    for tool in vf_env.tool_defs or ():
        name = str(tool.name)

        async def call(env: ClassicVerifiersEnv, arguments: dict[str, Any], _name: str = name) -> ToolResult:
            call_id = f"call_{uuid.uuid4().hex[:12]}"
            message = AssistantMessage(tool_calls=[VfToolCall(id=call_id, name=_name, arguments=json.dumps(arguments))])
            return await env.act(message)

        spec = schema_tool(name, str(tool.description or ""), dict(tool.parameters), call, is_async=True)
        add_tool(specs, spec, "the verifiers environment's tool_defs")

    async def say(env: ClassicVerifiersEnv, arguments: dict[str, Any]) -> ToolResult:
        return await env.act(AssistantMessage(content=str(arguments["text"])))

    if final:
        description = "Give your final answer as a plain message: this ends the episode, and it is scored."
    else:
        description = "Send your next message to the environment (a plain message, no tool call)."
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The message."}},
        "required": ["text"],
    }
    add_tool(specs, schema_tool(reply_tool, description, schema, say, is_async=True), "the verifiers environment")
    return specs


def environment(name: str, module: Any, args: dict[str, Any], namespace: dict[str, Any]) -> type[ClassicVerifiersEnv]:
    """The omnienv class for the classic environment ``module.load_environment(**args)`` builds."""
    vf_env = module.load_environment(**args)
    if not isinstance(vf_env, vf.MultiTurnEnv):
        raise TypeError(f"load_environment() returned a {type(vf_env).__name__}, not a vf.MultiTurnEnv")
    datasets = {
        split: dataset
        for split, dataset in (("train", vf_env.build_dataset()), ("eval", vf_env.build_eval_dataset()))
        if dataset is not None
    }
    watch_rubric(vf_env.rubric)
    tool_names = {str(tool.name) for tool in vf_env.tool_defs or ()}
    final = isinstance(vf_env, vf.SingleTurnEnv) or bool(tool_names)
    reply_tool = "answer" if final else "reply"
    if reply_tool in tool_names:
        reply_tool = "submit" if final else "say"
    limit = int(getattr(vf_env, "max_turns", -1) or -1)
    attributes = {
        **namespace,
        "vf_env": vf_env,
        "datasets": datasets,
        "splits": tuple(datasets),
        "reply_tool": reply_tool,
        "max_turns": None if limit > 0 else DEFAULT_MAX_TURNS,
    }
    cls: type[ClassicVerifiersEnv] = type(f"Verifiers_{type(vf_env).__name__}", (ClassicVerifiersEnv,), attributes)
    cls.tools = _tool_specs(vf_env, reply_tool, final)
    return cls
