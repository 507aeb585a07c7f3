"""A Verifiers v1 taskset (``verifiers.v1``: a module exporting one ``vf.Taskset`` subclass) as an
omnienv environment.

In Verifiers v1 the agent is a harness program in a runtime, its tools are ``vf.Toolset`` MCP
servers, and the task scores the rollout's trace. Here omnienv's agent is the harness, so the
episode keeps that trace itself:

- **tasks**: the taskset's ``load()`` (built with the import's arguments as its config), one
  split, ``train``; an infinite taskset gives its first :data:`MAX_TASKS`;
- **tools**: the MCP tools of the task's toolsets (``Task.toolsets``) and the taskset's shared
  ones (``Taskset.toolsets``), named as Verifiers' harnesses name them (``<server>_<tool>``, bare
  with ``TOOL_PREFIX = None``). Each episode runs its own toolset instances in this process,
  registered on an in-process MCP server, and their ``self.state`` is the trace's state, the
  in-process stand-in for Verifiers' state channel; plus ``answer(text)``, the agent's final
  reply, which ends the episode;
- **observations**: the prompt (system prompt, then the task's prompt), then each tool's content;
  a tool that raises is what a harness shows the model (MCP's error text), an ordinary result;
- **end and reward**: the task's ``@vf.stop`` conditions on the trace after each tool call, the
  final answer, or the trainer's cut; then ``Task.finalize`` and ``Task.score`` record the
  ``@vf.reward`` and ``@vf.metric`` values on the trace, and the reward is their weighted sum;
- **failures**: an exception from a stop condition, ``finalize`` or scoring (Verifiers' own
  ``TaskError``), or from the MCP machinery, is an infrastructure failure, flagged, never a 0.

No runtime (container or sandbox) is provided: tasks that declare ``NEEDS_CONTAINER`` are refused
at import, and signals that require a runtime are skipped by ``Task.score`` as Verifiers does
offline.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import random
import uuid
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, TypeVar

import verifiers.v1 as vf1
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as McpToolError
from verifiers.v1.configs.agent import AgentConfig
from verifiers.v1.graph import MessageNode
from verifiers.v1.session import hook_boundary
from verifiers.v1.state import state_cls
from verifiers.v1.trace import AgentInfo, Trace, TraceTask
from verifiers.v1.types import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from verifiers.v1.utils.decorators import invoke
from verifiers.v1.utils.generic import concrete_type

from omnienv.catalog._foreign import foreign_reward
from omnienv.catalog._schema_tool import add_tool, schema_tool
from omnienv.catalog._verifiers_messages import blocks, text_of
from omnienv.core import (
    AsyncEnvironment,
    Block,
    EnvironmentFailure,
    ImageBlock,
    Rubric,
    Task,
    TextBlock,
    ToolError,
    ToolResult,
    ToolSpec,
    UnknownEnvironmentError,
)

__all__ = ["MAX_TASKS", "V1VerifiersEnv", "environment"]

T = TypeVar("T")

MAX_TASKS = 10_000
DEFAULT_MAX_TURNS = 50
REPLY_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "The final answer."}},
    "required": ["text"],
}


def _bind_state(toolset: Any, state: Any) -> None:
    """Give ``toolset`` the episode's state on every call (Verifiers syncs it over an HTTP channel
    between processes; here they share one process, so they share the object)."""
    if not isinstance(state, toolset._state_cls):
        state = toolset._state_cls()  # a toolset of another state type keeps its own

    async def pull() -> Any:
        return state

    async def push(before: bytes) -> None:
        return None

    toolset._pull_state, toolset._push_state = pull, push


async def verifiers_reward(env: V1VerifiersEnv) -> float:
    """The task's ``@vf.reward`` functions on the episode's trace."""
    return await env.score()


def _mcp_blocks(result: Any) -> tuple[Block, ...]:
    out: list[Block] = []
    for item in result.content or ():
        if getattr(item, "type", None) == "text":
            out.append(TextBlock(item.text))
        elif getattr(item, "type", None) == "image":
            out.append(ImageBlock(base64.b64decode(item.data), item.mime_type))
    return tuple(out)


def _wire_content(content: Sequence[Block]) -> Any:
    """Tool content as Verifiers' harnesses put it in the conversation: text, or parts with images."""
    if all(isinstance(block, TextBlock) for block in content):
        return text_of(content)
    return [
        {"type": "text", "text": block.text}
        if isinstance(block, TextBlock)
        else {"type": "image_url", "image_url": {"url": block.data_url}}
        for block in content
    ]


class V1VerifiersEnv(AsyncEnvironment):
    """A v1 taskset's tasks as episodes; subclasses are made per module and config."""

    extras = ("verifiers",)
    splits = ("train",)
    max_turns = DEFAULT_MAX_TURNS
    rubric = Rubric(verifiers_reward)
    vf_tasks: ClassVar[tuple[Any, ...]] = ()
    taskset_class: ClassVar[Any] = None
    taskset_config: ClassVar[Any] = None
    routes: ClassVar[dict[str, tuple[int, str]]] = {}
    """omnienv tool name -> (position of its toolset in :meth:`toolsets`, the MCP tool's name)."""
    _trace: Any = None
    _task: Any = None
    _servers: list[Any] | None = None
    _toolsets: list[Any] | None = None
    _scored: bool = False

    @classmethod
    def tasks(cls, split: str) -> Sequence[Task]:
        ids = [task.data.id for task in cls.vf_tasks]
        if not all(isinstance(i, str) and i for i in ids) or len(set(ids)) != len(ids):
            ids = [f"train/{i:05d}" for i in range(len(cls.vf_tasks))]
        return [Task(str(task_id), "train", {"index": i}) for i, task_id in enumerate(ids)] if split == "train" else []

    @classmethod
    def toolsets(cls, vf_task: Any) -> list[Any]:
        """Fresh toolset instances for one episode of ``vf_task``: the task's, then the taskset's."""
        return [*type(vf_task).toolsets(vf_task.config), *cls.taskset_class.toolsets(cls.taskset_config)]

    def _add(self, message: Any, sampled: bool = False) -> None:
        parent = len(self._trace.nodes) - 1 if self._trace.nodes else None
        self._trace.nodes.append(MessageNode(parent=parent, message=message, sampled=sampled))

    async def setup(self, task: Task | None, rng: random.Random) -> Sequence[Block] | str:
        await self._drop()
        assert task is not None  # the one split always has tasks
        vf_task = self.vf_tasks[int(task.data["index"])]
        data = vf_task.data
        trace_task = TraceTask(type=type(vf_task).__name__, data=data, key=vf_task.key, hash=vf_task.hash)
        state = state_cls(type(vf_task))()
        self._trace = Trace(task=trace_task, state=state, agent=AgentInfo(config=AgentConfig()))
        self._task, self._scored = vf_task, False
        self._toolsets, self._servers = self.toolsets(vf_task), []
        for toolset in self._toolsets:
            await toolset.setup()
            await toolset.setup_task(data)
            _bind_state(toolset, state)
            server = MCPServer(toolset.server_name or type(toolset).__name__)
            toolset.register(server)
            self._servers.append(server)
        await vf_task.setup(self._trace, None)
        if data.system_prompt:
            self._add(SystemMessage(content=data.system_prompt))
        prompt = data.prompt
        for message in [UserMessage(content=prompt)] if isinstance(prompt, str) else list(prompt or ()):
            self._add(message)
        return blocks(self._trace.messages) or "(an empty prompt)"

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run MCP tool ``name`` of this episode's toolsets, as a harness would."""
        if self._servers is None or self._trace is None:
            raise EnvironmentFailure(f"{self.name}: no episode is running")
        position, raw = self.routes[name]
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        self._add(AssistantMessage(tool_calls=[ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))]), True)
        try:
            result = await self._servers[position].call_tool(raw, arguments)
            content, failed = _mcp_blocks(result), bool(getattr(result, "is_error", False))
        except McpToolError as exc:  # the tool raised: its error text, as the model would read it
            content, failed = (TextBlock(str(exc)),), True
        content = content or (TextBlock("(no output)"),)
        self._add(ToolMessage(tool_call_id=call_id, name=name, content=_wire_content(content)))
        stopped = await self._stopped()
        if failed and not stopped:
            raise ToolError(text_of(content))
        return ToolResult(content, 0.0, stopped, {"stop_condition": self._trace.stop_condition} if stopped else {})

    async def reply(self, text: str) -> ToolResult:
        """The agent's final answer: the last assistant message, which ends the episode."""
        if self._trace is None:
            raise EnvironmentFailure(f"{self.name}: no episode is running")
        self._add(AssistantMessage(content=text), True)
        self._trace.root_reply = text
        self._trace.stop("agent_completed")  # what Verifiers records when a harness finishes
        return ToolResult((TextBlock("Answer received; the episode is over."),), 0.0, True)

    async def _stopped(self) -> bool:
        """Whether one of the task's ``@vf.stop`` conditions on the trace fires now (those on a
        model request or response have none to read here)."""
        for stop in self._task.hooks("stop"):
            if hook_boundary(stop, allow_trace=True) is not Trace:
                continue
            result = invoke(stop, {Trace: self._trace})
            result = await result if asyncio.iscoroutine(result) else result
            if not isinstance(result, bool):
                raise EnvironmentFailure(f"@stop {stop.__name__} must return a bool, got {type(result).__name__}")
            if result:
                self._trace.stop(stop.__name__)
                return True
        return False

    async def score(self) -> float:
        """Finalize and score the episode's trace with the task's own functions."""
        if self._trace is None or self._task is None:
            raise EnvironmentFailure(f"{self.name}: no episode to score")
        if not self._scored:
            self._scored = True
            self._trace.stop("cut")  # first condition wins: an answered or stopped trace keeps its own
            await self._task.finalize(self._trace, None)
            await self._task.score(self._trace)
        return foreign_reward(self._trace.reward, "the verifiers task's scoring")

    def state_fields(self) -> dict[str, Any]:
        """Why the trace stopped, and once scored the task's ``@vf.metric`` values."""
        if self._trace is None:
            return {}
        metrics = {k: v for k, v in self._trace.metrics.items() if v is not None} if self.failure is None else {}
        return {"stop_condition": self._trace.stop_condition, **({"metrics": metrics} if metrics else {})}

    async def _drop(self) -> None:
        toolsets, self._toolsets, self._servers = self._toolsets or [], None, None
        for toolset in toolsets:
            stack = getattr(toolset, "_exit_stack", None)
            if stack is not None:
                await stack.aclose()

    async def teardown(self) -> None:
        await self._drop()
        self._trace = self._task = None


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from synchronous code, on a helper thread when this thread
    already runs an event loop (a class may be made from inside a server's loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1) as helper:
        return helper.submit(asyncio.run, coroutine).result()


async def _listed(toolsets: list[Any]) -> list[tuple[int, str, Any]]:
    """``(position, name, MCP tool)`` for every tool of ``toolsets``, from throw-away servers."""
    listed = []
    for position, toolset in enumerate(toolsets):
        server = MCPServer(toolset.server_name or type(toolset).__name__)
        toolset.register(server)
        listed += [(position, toolset.server_name, tool) for tool in await server.list_tools()]
    return listed


def _tool_specs(cls: type[V1VerifiersEnv], listed: list[tuple[int, str, Any]]) -> dict[str, ToolSpec]:
    specs: dict[str, ToolSpec] = {}
    routes: dict[str, tuple[int, str]] = {}
    for position, prefix, tool in listed:
        name = f"{prefix}_{tool.name}" if prefix else str(tool.name)

        async def call(env: V1VerifiersEnv, arguments: dict[str, Any], _name: str = name) -> ToolResult:
            return await env.call(_name, arguments)

        routes[name] = (position, str(tool.name))
        spec = schema_tool(name, (tool.description or "").strip(), tool.input_schema, call, is_async=True)
        add_tool(specs, spec, "the verifiers taskset")

    async def answer(env: V1VerifiersEnv, arguments: dict[str, Any]) -> ToolResult:
        return await env.reply(str(arguments["text"]))

    reply = "answer" if "answer" not in specs else "submit"
    description = "Give your final answer as a plain message: this ends the episode, and it is scored."
    specs[reply] = schema_tool(reply, description, REPLY_SCHEMA, answer, is_async=True)
    cls.routes = routes
    return specs


def environment(name: str, module: Any, args: dict[str, Any], namespace: dict[str, Any]) -> type[V1VerifiersEnv]:
    """The omnienv class for the taskset ``module`` exports, built with config ``args``."""
    exported = [getattr(module, n, None) for n in getattr(module, "__all__", ())]
    (taskset_class,) = [o for o in exported if isinstance(o, type) and issubclass(o, vf1.Taskset)]
    config_class = concrete_type(taskset_class, vf1.TasksetConfig, origin=vf1.Taskset) or vf1.TasksetConfig
    config = config_class.model_validate(args)
    taskset = taskset_class(config)
    vf_tasks = tuple(itertools.islice(taskset, MAX_TASKS))
    if not vf_tasks:
        raise UnknownEnvironmentError(f"the taskset of '{name}' loads no tasks")
    if any(getattr(type(task), "NEEDS_CONTAINER", False) for task in vf_tasks):
        raise UnknownEnvironmentError(f"the tasks of '{name}' need a container runtime: run them with vf-eval")
    attributes = {**namespace, "vf_tasks": vf_tasks, "taskset_class": taskset_class, "taskset_config": config}
    cls: type[V1VerifiersEnv] = type(f"Verifiers_{taskset_class.__name__}", (V1VerifiersEnv,), attributes)
    listed = _run(_listed(cls.toolsets(vf_tasks[0])))
    cls.tools = _tool_specs(cls, listed)
    return cls
