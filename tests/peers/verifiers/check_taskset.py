"""Run in verifiers 0.4.0's virtualenv: the v1 taskset, toolset and scoring, without a model.

Prints JSON lines. The environment is ``tests.dialects.envs:Counter``: ``add(n)`` with 0.25 per
call, a rubric worth 1 at 3, and a crash on a negative ``n``; ``tests.dialects.envs:Snapshot``
answers with an image. The Jupyter and Desktop tasksets are built with their ``setup`` refusing
to run, to show that rows are rendered without a kernel or a display.
"""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

from mcp.server.mcpserver import MCPServer
from verifiers.v1.mcp.server import _call_state
from verifiers.v1.utils.loaders import taskset_class

from omnienv.core import ToolCall
from omnienv.envs.desktop import Desktop
from omnienv.envs.jupyter import Jupyter
from omnienv_verifiers import OmniState, OmniTask, OmniTasksetConfig, OmniToolset, OmniToolsetConfig

COUNTER = "tests.dialects.envs:Counter"


def texts(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def refuse(self: Any, task: Any, rng: Any) -> str:
    raise AssertionError(f"{type(self).__name__}.setup ran to build a dataset row")


async def play(task: OmniTask, calls: list[ToolCall]) -> dict:
    toolset = OmniToolset(OmniToolsetConfig())
    await toolset.setup_task(task.data)  # verifiers hands tool servers the task's data
    state = OmniState()
    _call_state.set(state)
    outputs = [texts(await toolset._step(call)) for call in calls]
    trace = SimpleNamespace(state=state)
    try:
        reward: float | str = await task.episode_reward(trace)
    except Exception as exc:
        reward = f"raised {type(exc).__name__}"
    return {
        "texts": outputs,
        "reward": reward,
        "rubric": await task.rubric(trace),
        "stop": await task.episode_over(trace),
        "failure": state.failure,
        "steps": state.steps,
    }


async def main() -> None:
    cls = taskset_class("omnienv-verifiers")  # how vf-eval resolves the name
    taskset = cls(OmniTasksetConfig(env=COUNTER, episodes=2))
    tasks = list(taskset)
    print(
        json.dumps(
            {
                "kind": "taskset",
                "class": cls.__name__,
                "prompts": [t.data.prompt for t in tasks],
                "seeds": [t.data.seed for t in tasks],
            }
        )
    )

    toolset = OmniToolset(OmniToolsetConfig())
    await toolset.setup_task(tasks[0].data)
    server = MCPServer("omnienv")
    toolset.register(server)
    tools = {tool.name: tool.input_schema for tool in await server.list_tools()}
    print(json.dumps({"kind": "tools", "tools": tools}))

    win = await play(tasks[0], [ToolCall("add", {"n": 1}), ToolCall("add", {"n": 2}), ToolCall("add", {"n": 1})])
    print(json.dumps({"kind": "win", **win}))
    crash = await play(tasks[1], [ToolCall("add", {"n": -1}), ToolCall("add", {"n": 1})])
    print(json.dumps({"kind": "crash", **crash}))

    (snapshot,) = list(cls(OmniTasksetConfig(env="tests.dialects.envs:Snapshot", episodes=1)))
    toolset = OmniToolset(OmniToolsetConfig())
    await toolset.setup_task(snapshot.data)
    _call_state.set(OmniState())
    result = await toolset._step(ToolCall("look", {}))
    content = [{"type": block.type, "mime_type": getattr(block, "mime_type", None)} for block in result.content]
    await toolset._exit_stack.aclose()  # as when verifiers stops the tool server: the environment is closed
    print(json.dumps({"kind": "image", "content": content, "closed": toolset.env is None}))

    Jupyter.setup = refuse  # type: ignore[method-assign]
    Desktop.setup = refuse  # type: ignore[method-assign]
    rows = {
        name: [task.data.prompt for task in cls(OmniTasksetConfig(env=name, split="test", tasks=[task_id]))]
        for name, task_id in (("jupyter", "test/sales_total-3"), ("desktop", "test/find-word"))
    }
    print(json.dumps({"kind": "preview", "rows": rows}))


if __name__ == "__main__":
    asyncio.run(main())
