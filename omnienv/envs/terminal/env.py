"""Terminal: Harbor-format tasks in a sandboxed shell, graded by each task's own verifier.

A complete omnienv environment in one file. Read it top to bottom:

1. the rubric: the task's ``tests/`` run after the episode, in a sandbox of their own, over a copy
   of the final workspace (:mod:`.verifier`); its named rewards are the rubric's parts;
2. ``Terminal``: ``setup`` makes the session's sandbox, builds the task's starting workspace
   (:mod:`.workspace`) and starts one persistent bash there; four ``@tool`` methods are the agent's
   actions; ``harbor_environment(path)`` makes the same environment over any Harbor task directory
   or folder of them (:mod:`.harbor`).

The shell (:class:`~omnienv.sandboxes.shell.SandboxShell`) runs in bubblewrap: no network, a
read-only system, none of the server's files or variables, memory/CPU/process limits from the
task's ``task.toml``. The agent never sees ``tests/`` or ``solution/``: they are not in its sandbox.
A command the agent runs that hangs, exits the shell or fills its output is its own outcome (the
result says so); so is running out of the task's ``[agent] timeout_sec`` (the episode ends and is
graded). Only a sandbox the host cannot make is an infrastructure failure, never scored.
"""

from __future__ import annotations

import base64
import random
import re
import shlex
import time
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from omnienv.core import AgentCausedEnd, Environment, Rubric, RubricScore, Task, TaskError, ToolError, ToolResult, tool
from omnienv.envs.terminal.harbor import HarborTask, find_tasks
from omnienv.envs.terminal.verifier import VERIFIER_PREFIX, Verdict, preflight_nesting, verify
from omnienv.envs.terminal.workspace import build_workspace, env_for, solution_link, workspace_binds, workspace_dir
from omnienv.sandboxes.bubblewrap import Limits
from omnienv.sandboxes.sandbox import Sandbox
from omnienv.sandboxes.shell import CommandResult, SandboxShell
from omnienv.sandboxes.upkeep import sweep_stale

__all__ = ["SUITE", "Terminal", "harbor_environment"]

SUITE = Path(__file__).parent / "tasks"
"""The shipped task suite."""

SHELL_PREFIX = "omnienv-terminal-"
MAX_TIMEOUT_S = 600.0
SOLUTION_DIR = "/tmp/omnienv-solution"
"""Where the oracle writes a task's ``solution/`` in the sandbox (whose root is read-only); Harbor's
runner uploads it to ``/solution``, which is a link here, so a ``solve.sh`` naming it works."""
FILE_BYTES = 65_536
WRITE_BYTES = 1_000_000
FILES_PER_MB = 256
"""A task's workspace holds a file (or directory, or link) per 4 KiB of its ``storage_mb``, as
mke2fs makes a small file system, and at most ``Limits.work_files``: a task that asks for little
storage gets few files, and every workspace few enough for its verifier's copy to take seconds."""


@cache
def sweep_dead_owners() -> int:
    """Shells and verifiers of a process that was killed (or ran out of memory) keep their mounts,
    cgroups and files until swept: the first episode in each process sweeps them, as the kernel
    and display pools do when they start."""
    return sweep_stale(prefix=SHELL_PREFIX) + sweep_stale(prefix=VERIFIER_PREFIX)


# -- 1. the rubric -------------------------------------------------------------------------------


def verifier(env: Terminal) -> float:
    """The task's own verifier, run over the final workspace."""
    return env.grade().reward


class VerifierRubric(Rubric):
    """The verifier's reward as the total, its named rewards as the parts."""

    def __init__(self) -> None:
        super().__init__(verifier)

    def score(self, env: Any) -> RubricScore:
        verdict: Verdict = env.grade()
        parts = dict(verdict.rewards) or {"reward": verdict.reward}
        return RubricScore(verdict.reward, parts)


# -- 2. the environment --------------------------------------------------------------------------


class Terminal(Environment):
    """Solve terminal tasks (files, code, git, logs, builds) in a sandboxed Linux shell."""

    name = "terminal"
    task_root: ClassVar[Path] = SUITE
    system_packages = ("bubblewrap", "python3", "git", "gcc", "make", "libc6-dev")  # what the tasks' Dockerfiles name
    splits = ("train", "test")
    max_turns = 50
    rubric = VerifierRubric()
    policies: ClassVar[dict[str, str]] = {"oracle": "omnienv.envs.terminal.oracle:HarborOracle"}

    def __init__(self) -> None:
        self.sandbox: Sandbox | None = None
        self.shell: SandboxShell | None = None
        self.harbor: HarborTask | None = None
        self.verdict: Verdict | None = None
        self.commands = 0
        self.started = 0.0

    @classmethod
    def harbor_tasks(cls) -> dict[str, HarborTask]:
        """The class's Harbor tasks by id, read once."""
        return {task.id: task for task in find_tasks(cls.task_root)}

    @classmethod
    def step_seconds(cls) -> float:
        """A command at its longest timeout, then the slowest verifier (the turn that ends an episode
        grades it), or the slowest build (a reset runs it), and minutes more to restart the shell
        and copy the workspace."""
        tasks = cls.harbor_tasks().values()
        verifier = max((task.verifier_timeout for task in tasks), default=0.0)
        build = max((task.build_timeout for task in tasks), default=0.0)
        return max(MAX_TIMEOUT_S + verifier, build) + 300.0

    @classmethod
    def tasks(cls, split: str) -> tuple[Task, ...]:
        return tuple(_as_task(task) for task in cls.harbor_tasks().values() if task.split == split)

    @classmethod
    def preflight(cls) -> None:
        """A served terminal refuses to start where shells cannot be sandboxed, or where the
        graders of its tasks cannot sandbox the agent's code inside the verifier's sandbox."""
        from omnienv.sandboxes.upkeep import preflight

        preflight()
        if any(task.nests_its_grader for task in cls.harbor_tasks().values()):
            preflight_nesting()

    def render_prompt(self, task: Task | None, rng: random.Random) -> str:
        """The prompt is the task's instruction: datasets render it with no sandbox."""
        return self._harbor(task, rng).instruction

    def _harbor(self, task: Task | None, rng: random.Random) -> HarborTask:
        if task is None:
            task = rng.choice(self.task_index().split(self.task_index().default_split or "test"))
        name = task.id.partition("/")[2] if task.id.startswith(task.split + "/") else task.id
        harbor = self.harbor_tasks().get(name)
        if harbor is None:  # a Task made by hand, or another environment's: the caller's mistake
            raise TaskError(f"{self.name} has no task '{task.id}': pass one of its own tasks, or the id of one")
        return harbor

    def setup(self, task: Task | None, rng: random.Random) -> str:
        self.teardown()
        harbor = self.harbor = self._harbor(task, rng)
        self.verdict, self.commands = None, 0
        megabyte = 1024 * 1024
        limits = Limits(
            memory_bytes=harbor.memory_mb * megabyte,
            total_memory_bytes=harbor.memory_mb * megabyte,
            cpus=harbor.cpus,
            work_bytes=harbor.storage_mb * megabyte,
            work_files=min(Limits().work_files, harbor.storage_mb * FILES_PER_MB),
            cpu_seconds=int(max(900.0, harbor.agent_timeout)),
        )
        sweep_dead_owners()
        self.sandbox = Sandbox(limits, prefix=SHELL_PREFIX, hidden=(harbor.root,))  # the suite's tests, solutions
        build_workspace(self.sandbox, harbor)
        self.shell = SandboxShell(
            self.sandbox,
            workdir=harbor.workdir,
            env=env_for(harbor),
            binds=workspace_binds(self.sandbox, harbor),
            links=solution_link(harbor, SOLUTION_DIR),
        )
        self.shell.start()
        self.started = time.monotonic()
        return harbor.instruction

    def teardown(self) -> None:
        shell, self.shell = self.shell, None
        sandbox, self.sandbox = self.sandbox, None
        if shell is not None:
            shell.close()
        if sandbox is not None:
            sandbox.close()

    def grade(self) -> Verdict:
        """The verifier's verdict on the workspace as the agent left it (made once per episode)."""
        if self.verdict is None:
            if self.sandbox is None or self.harbor is None:
                raise RuntimeError("no workspace to grade: the episode has not started")
            if self.shell is not None:
                self.shell.close()  # the agent's processes die before the copy
            self.verdict = verify(self.harbor, workspace_dir(self.sandbox), self.sandbox.limits)
        return self.verdict

    def _run(self, command: str, timeout: float, output_bytes: int | None = None) -> CommandResult:
        """Run in the shell for at most ``timeout`` seconds, and never past the task's own limit."""
        if self.shell is None or self.harbor is None or self.sandbox is None:  # pragma: no cover
            raise ToolError("no shell: the episode has not started")
        left = self.harbor.agent_timeout - (time.monotonic() - self.started)
        if left <= 0:
            raise AgentCausedEnd(
                f"the task's time is up ({self.harbor.agent_timeout:g} s): the workspace is graded as it stands",
                "agent_timeout",
            )
        self.commands += 1
        sandbox = self.sandbox
        full = sandbox.memory_limit_hits()
        try:
            return self.shell.run(command, min(timeout, left), output_bytes)
        except Exception as exc:  # a new shell (after an exit, or one that would not stop) did not start
            if sandbox.memory_limit_hits() > full:  # the agent's files or processes fill its memory
                raise AgentCausedEnd(
                    "the sandbox's memory is full (the workspace's files count too): no new shell could start; "
                    "the workspace is graded as it stands",
                    "memory_limit",
                ) from exc
            raise

    @tool
    def run(self, command: str, timeout: float = 60.0) -> str:
        """Run a bash command in the task's working directory and show its output and exit code.

        The shell persists between calls: the working directory, exported variables and
        background jobs (``cmd &``) stay. There is no network. Output is cut to about 20 KB.

        Args:
            command: The command line, e.g. "ls -la" or "python3 -m unittest -v".
            timeout: Seconds before the command is interrupted (Ctrl-C), at most 600.
        """
        if not command.strip():
            raise ToolError("the command is empty: pass a bash command line as 'command'")
        if not 0 < timeout <= MAX_TIMEOUT_S:
            raise ToolError(f"timeout must be between 0 and {MAX_TIMEOUT_S:g} seconds, got {timeout:g}")
        result = self._run(command, timeout)
        lines = [result.output] if result.output else []
        if result.timed_out:
            lines.append(f"[interrupted: the command ran past its {timeout:g} s timeout or the task's time limit]")
        if result.restarted:
            lines.append("[the shell ended; a new one started in the working directory: variables and jobs are gone]")
        if result.exit_code is not None:
            lines.append(f"[exit code {result.exit_code}]")
        return "\n".join(lines)

    @tool
    def read_file(self, path: str) -> str:
        """Show a text file (up to 64 KB).

        Args:
            path: The file, absolute or relative to the shell's current directory.
        """
        result = self._run(f"head -c {FILE_BYTES + 1} -- {shlex.quote(path)}", 30.0, 2 * FILE_BYTES)
        if result.exit_code != 0:
            raise ToolError(result.output or f"cannot read {path}")
        text = result.output
        if len(text.encode()) > FILE_BYTES:
            return text[:FILE_BYTES] + f"\n[... {path} is longer than {FILE_BYTES} bytes: read the rest with run]"
        return text

    @tool
    def write_file(self, path: str, content: str) -> str:
        """Write a text file (parent directories are made), replacing what was there.

        Args:
            path: The file, absolute or relative to the shell's current directory.
            content: The whole new content of the file.
        """
        data = content.encode()
        if len(data) > WRITE_BYTES:
            raise ToolError(f"the content is {len(data)} bytes; write at most {WRITE_BYTES} per call")
        encoded = base64.b64encode(data).decode()
        quoted = shlex.quote(path)
        result = self._run(f'mkdir -p -- "$(dirname -- {quoted})" && printf %s {encoded} | base64 -d > {quoted}', 30.0)
        if result.exit_code != 0:
            raise ToolError(result.output or f"cannot write {path}")
        return f"wrote {len(data)} bytes to {path}"

    @tool
    def submit(self) -> ToolResult:
        """Say the task is done: the episode ends and the task's tests grade the workspace."""
        # Graded now, so the verdict (all tests passed) reaches the infrastructure's win rates.
        solved = self.grade().reward >= 1.0
        return ToolResult.of("Submitted: the task's tests graded the workspace.", done=True, info={"success": solved})

    def state_fields(self) -> dict[str, object]:
        fields: dict[str, object] = {"commands": self.commands}
        if self.verdict is not None:
            fields["verifier"] = {"rewards": self.verdict.rewards, "note": self.verdict.note}
        return fields


def _as_task(task: HarborTask) -> Task:
    data = {key: task.metadata[key] for key in ("category", "difficulty", "tags") if key in task.metadata}
    return Task(f"{task.split}/{task.id}", task.split, data)


@cache
def harbor_environment(path: Path) -> type[Terminal]:
    """The terminal environment over a Harbor task directory, or a folder of them.

    Its splits are those the tasks name (``[metadata] split``; a task naming none is in
    ``test``), train first.
    """
    root = path.resolve()
    tasks = find_tasks(root)
    named = {task.split for task in tasks}
    splits = tuple(s for s in ("train", "test") if s in named) + tuple(sorted(named - {"train", "test"}))
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", root.name).strip("-") or "harbor"
    attributes = {"name": name, "task_root": root, "splits": splits, "__module__": __name__,
                  "description": f"Harbor tasks from {root}"}  # fmt: skip
    return type(f"Harbor_{name.replace('-', '_').replace('.', '_')}", (Terminal,), attributes)
