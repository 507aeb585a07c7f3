"""The oracle: a scripted Jupyter player that knows the reference solution of every task family.

It recognises the task from the prompt (the text an agent reads), runs the family's reference
solution through the environment's own tools, reads ``ANSWER: <value>`` back from the
observation and submits it with ``final_answer``. Solving every task this way proves each one is
solvable as posed, inside the sandbox, through the tools, from the files alone.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from omnienv.core import Task, ToolCall
from omnienv.envs.jupyter.solutions import solution
from omnienv.envs.jupyter.tasks import jupyter_tasks

if TYPE_CHECKING:  # the episode record belongs to the rollout layer; the player only reads it
    from omnienv.rollout.trajectory import Episode

__all__ = ["JupyterOracle", "task_for_prompt"]

_ANSWER = re.compile(r"ANSWER: (.+)")


@cache
def _questions() -> dict[str, Task]:
    return {task.data["question"]: task for split in ("train", "test") for task in jupyter_tasks(split)}


def task_for_prompt(prompt: str) -> Task:
    """The task whose question the prompt asks (the longest, should one question hold another)."""
    asked = [question for question in _questions() if question in prompt]
    if not asked:
        raise ValueError("this prompt asks none of the Jupyter environment's tasks")
    return _questions()[max(asked, key=len)]


class JupyterOracle:
    """Runs the reference solution, then submits the answer it printed."""

    name = "oracle"

    async def act(self, episode: Episode) -> ToolCall:
        if not episode.steps:
            prompt = episode.prompt.text if episode.prompt is not None else ""
            task = task_for_prompt(prompt)
            kind, source = solution(task.data["family"], task.data["params"])
            if kind == "shell":
                return ToolCall("execute_shell_command", {"command": source})
            return ToolCall("add_and_execute_code_cell", {"code": source})
        found = _ANSWER.findall(episode.steps[-1].result.observation.text)
        return ToolCall("final_answer", {"answer": found[-1].strip() if found else ""})
