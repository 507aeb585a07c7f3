"""The oracle: runs a task's ``solution/`` through the agent's own tools, as Harbor's oracle agent does.

It writes the solution's files to ``/tmp/omnienv-solution`` in the episode's sandbox (which
``/solution``, Harbor's place for them, links to), runs ``solve.sh`` there from the working
directory (with task.toml's ``[solution] env``), and submits.
Solving every task this way proves each one solvable as posed, in the sandbox, through the tools;
the solution never reaches an agent.
"""

from __future__ import annotations

import base64
import shlex
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from omnienv.core import ToolCall
from omnienv.envs.terminal.env import MAX_TIMEOUT_S, SOLUTION_DIR, WRITE_BYTES, Terminal
from omnienv.envs.terminal.harbor import HarborTask

if TYPE_CHECKING:  # the episode record belongs to the rollout layer; the player only reads it
    from omnienv.rollout.trajectory import Episode

__all__ = ["HarborOracle", "solution_calls"]

_PIECE = 300_000
"""Bytes of a file per ``run`` (400 KB of base64 on its command line)."""


def solution_calls(task: HarborTask) -> list[ToolCall]:
    """The tool calls that replay ``task``'s solution: its files written, ``solve.sh`` run, submit."""
    calls = []
    for path in sorted(task.solution_dir.rglob("*")):
        if path.is_file():
            calls.extend(_file_calls(path, f"{SOLUTION_DIR}/{path.relative_to(task.solution_dir).as_posix()}"))
    timeout = min(MAX_TIMEOUT_S, task.agent_timeout)
    env = "".join(f"{name}={shlex.quote(value)} " for name, value in task.solution_env.items())
    calls.append(ToolCall("run", {"command": f"{env}bash {SOLUTION_DIR}/solve.sh", "timeout": timeout}))
    calls.append(ToolCall("submit", {}))
    return calls


def _file_calls(path: Path, target: str) -> list[ToolCall]:
    """One solution file, as it is: text through ``write_file``; bytes that are no UTF-8 (an archive, an
    image) or more than ``write_file`` takes, base64 through ``run`` in pieces; the executable bit kept,
    so ``solve.sh`` may run its helpers (``"$(dirname "$0")/fix.py"``) as Harbor's oracle does."""
    data = path.read_bytes()
    quoted = shlex.quote(target)
    try:
        calls = [] if len(data) > WRITE_BYTES else [ToolCall("write_file", {"path": target, "content": data.decode()})]
    except UnicodeDecodeError:
        calls = []
    if not calls:
        calls.append(ToolCall("run", {"command": f'mkdir -p -- "$(dirname -- {quoted})" && : > {quoted}'}))
        for start in range(0, len(data), _PIECE):
            encoded = base64.b64encode(data[start : start + _PIECE]).decode()
            calls.append(ToolCall("run", {"command": f"printf %s {encoded} | base64 -d >> {quoted}"}))
    if path.stat().st_mode & stat.S_IXUSR:
        calls.append(ToolCall("run", {"command": f"chmod +x {quoted}"}))
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
