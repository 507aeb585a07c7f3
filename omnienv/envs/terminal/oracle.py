"""The oracle: runs a task's ``solution/`` through the agent's own tools, as Harbor's oracle agent does.

It writes the solution's files to ``/tmp/omnienv-solution`` in the episode's sandbox, runs
``solve.sh`` there from the working directory (with task.toml's ``[solution] env``), and submits.
Solving every task this way proves each one solvable as posed, in the sandbox, through the tools;
the solution never reaches an agent.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from omnienv.core import ToolCall
from omnienv.envs.terminal.env import MAX_TIMEOUT_S, Terminal
from omnienv.envs.terminal.harbor import HarborTask

if TYPE_CHECKING:  # the episode record belongs to the rollout layer; the player only reads it
    from omnienv.rollout.trajectory import Episode

__all__ = ["HarborOracle", "solution_calls"]

SOLUTION_DIR = "/tmp/omnienv-solution"


def solution_calls(task: HarborTask) -> list[ToolCall]:
    """The tool calls that replay ``task``'s solution: its files written, ``solve.sh`` run, submit."""
    calls = [
        ToolCall("write_file", {"path": f"{SOLUTION_DIR}/{path.relative_to(task.solution_dir).as_posix()}",
                                "content": path.read_text()})
        for path in sorted(task.solution_dir.rglob("*")) if path.is_file()
    ]  # fmt: skip
    timeout = min(MAX_TIMEOUT_S, task.agent_timeout)
    env = "".join(f"{name}={shlex.quote(value)} " for name, value in task.solution_env.items())
    calls.append(ToolCall("run", {"command": f"{env}bash {SOLUTION_DIR}/solve.sh", "timeout": timeout}))
    calls.append(ToolCall("submit", {}))
    return calls


class HarborOracle:
    """Replays the task's reference solution, then submits."""

    name = "oracle"

    def __init__(self, env_class: type[Terminal] = Terminal) -> None:
        self.env_class = env_class
        self._plan: list[ToolCall] = []

    @classmethod
    def for_environment(cls, env_class: type[Terminal]) -> HarborOracle:
        return cls(env_class)

    def task_for(self, episode: Episode) -> HarborTask:
        tasks = self.env_class.harbor_tasks()
        if episode.task_id is not None:
            found = tasks.get(episode.task_id.partition("/")[2]) or tasks.get(episode.task_id)
            if found is not None:
                return found
        prompt = episode.prompt.text if episode.prompt is not None else ""
        for task in tasks.values():
            if task.instruction == prompt:
                return task
        raise ValueError("this episode plays none of the environment's Harbor tasks")

    async def act(self, episode: Episode) -> ToolCall:
        if not episode.steps:
            self._plan = solution_calls(self.task_for(episode))
        return self._plan.pop(0) if self._plan else ToolCall("submit", {})
