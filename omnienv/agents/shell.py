"""Which tool of an environment is its shell, and how to read a command's exit code from its output.

A harness runs shell commands and reads back their output and exit code; an environment offers a
tool that runs one command line and returns text. This module is the one place that matches the
two, with no I/O: it picks the environment's shell tool (and the tool that submits, when there is
one) from the tool schemas alone, so it works as well on a remote server's listed tools as on an
environment class, and it splits a tool's text into the output and the exit code a harness expects.

Known shells: the terminal environment's ``run(command, timeout)`` (its output always ends with
``[exit code N]``), the jupyter environment's ``execute_shell_command(command)`` (which writes
``[exit code N]`` only when it is not 0, ``[command stopped after ...]`` on a timeout and
``(no output)`` for none), and the desktop environment's ``run_command(command)`` (which writes
``(no output)`` for none, ``STDERR: ...`` after the output when there is some, then ``(exit code
N)`` when it is not 0, or ``(killed after N s)`` on a timeout).

Known submit tools: terminal's ``submit()``, jupyter's ``final_answer(answer)`` and the desktop's
``terminate(status)``, called with ``status="success"`` (the agent says it is done; the desktop's
check scores what it did, not the status).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from omnienv.core import ToolCall, UsageError

__all__ = ["SUBMIT_TOOLS", "ShellOutput", "ShellTool", "find_shell_tool", "shell_only_note"]

SHELL_TOOLS = ("run", "execute_shell_command", "bash", "shell", "run_command", "execute")
"""Tool names tried first, in this order, when the caller names none."""
SUBMIT_TOOLS = ("submit", "final_answer", "terminate")
"""Tools that end the episode by the agent's own decision, tried in this order."""
_FIXED_SUBMITS = {"terminate": ("status", "success")}
"""Submit tools whose one argument is not an answer but a word of their own: the value to send."""
TIMED_OUT = 124
"""The exit code of a command the environment stopped at its time limit (as ``timeout(1)`` gives)."""

_EXIT = re.compile(r"\n?(?:\[exit code (-?\d+)\]|\(exit code (-?\d+)\))\s*\Z")
_STOPPED = re.compile(r"(?:\[(?:command stopped|interrupted) after [^\]]*\]|\(killed after [^)]*\))\s*\Z")
_NO_OUTPUT = "(no output)"
_LEAST_S = 0.001
"""The shortest time limit a command is given (a tool takes none of 0 s)."""


class _Listed(Protocol):
    """A tool as an environment class or a server lists it."""

    @property
    def name(self) -> str: ...
    @property
    def parameters(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class ShellOutput:
    """One command's result as a harness reads it."""

    output: str
    exit_code: int


def _properties(tool: _Listed) -> dict[str, Any]:
    properties = tool.parameters.get("properties")
    return properties if isinstance(properties, dict) else {}


def _required(tool: _Listed) -> list[str]:
    required = tool.parameters.get("required")
    return [str(name) for name in required] if isinstance(required, list) else []


def _is_string(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "string"


@dataclass(frozen=True, slots=True)
class ShellTool:
    """How commands reach one environment: its shell tool, and the tool that submits, if any."""

    name: str
    command_arg: str = "command"
    timeout_arg: str | None = None
    """The shell tool's time-limit argument, when it takes one (seconds)."""
    submit: str | None = None
    submit_arg: str | None = None
    """The submit tool's one text argument (jupyter's ``final_answer(answer)``), or None for a
    submit tool that takes none (terminal's ``submit()``)."""
    submit_value: str | None = None
    """What ``submit_arg`` always gets, where it is not an answer (the desktop's
    ``terminate(status="success")``); None: the text after the marker."""
    timeout_default: float | None = None
    """The time limit the tool gives a command when none is passed (its schema's default)."""

    def call(self, command: str, timeout: float | None, left: float | None = None) -> ToolCall:
        """The tool call that runs ``command`` (with the time limit, where the tool takes one).

        ``left`` is how long the harness has left: a time limit past it (the tool's default one
        too) is cut to it, since a command still running when the harness is stopped is let
        finish and counts, and a long one started just before the end ran on long after it."""
        arguments: dict[str, Any] = {self.command_arg: command}
        if self.timeout_arg is not None:
            limit = timeout if timeout is not None else self.timeout_default
            if left is not None and limit is not None and left < limit:
                timeout = max(left, _LEAST_S)
            if timeout is not None:
                arguments[self.timeout_arg] = timeout
        return ToolCall(self.name, arguments)

    def submit_call(self, text: str) -> ToolCall | None:
        """The call that submits (with ``text`` as the answer where the tool takes one), or None."""
        if self.submit is None:
            return None
        if self.submit_arg is None:
            return ToolCall(self.submit, {})
        value = self.submit_value if self.submit_value is not None else text.strip()
        return ToolCall(self.submit, {self.submit_arg: value})

    @staticmethod
    def parse(text: str, is_error: bool = False) -> ShellOutput:
        """The output and exit code in a shell tool's text: the ``[exit code N]`` (or ``(exit code
        N)``) line taken off the end; a command stopped at its time limit is 124; an error
        observation (the tool refused the call) is 2, as a shell gives for a usage error;
        ``(no output)`` is none; anything else ran and exited 0."""
        match = _EXIT.search(text)
        if match:
            return ShellOutput(text[: match.start()], int(match.group(1) or match.group(2)))
        if _STOPPED.search(text):
            return ShellOutput(text, TIMED_OUT)
        if is_error:
            return ShellOutput(text, 2)
        return ShellOutput("" if text.strip() == _NO_OUTPUT else text, 0)


def _submit_tool(tools: Mapping[str, _Listed]) -> tuple[str | None, str | None, str | None]:
    for name in SUBMIT_TOOLS:
        tool = tools.get(name)
        if tool is None:
            continue
        required = _required(tool)
        if not required:
            return name, None, None
        if len(required) == 1 and _is_string(_properties(tool).get(required[0])):
            fixed = _FIXED_SUBMITS.get(name)
            if fixed is None:
                return name, required[0], None
            if fixed[0] == required[0]:
                return name, *fixed
    return None, None, None


def find_shell_tool(tools: Mapping[str, _Listed], name: str | None = None) -> ShellTool:
    """The environment's shell tool: ``name`` if given, else the first known shell name present.

    A shell tool takes its command as a string argument ``command`` (or ``cmd``) and may take a
    number ``timeout``; every other required argument disqualifies it. Raises :class:`UsageError`
    naming the tools there are when none fits, since no harness can play such an environment.
    """
    candidates = [name] if name else [n for n in SHELL_TOOLS if n in tools]
    for candidate in candidates:
        tool = tools.get(candidate)
        if tool is None:
            break
        properties = _properties(tool)
        command = next((arg for arg in ("command", "cmd") if _is_string(properties.get(arg))), None)
        if command is None or set(_required(tool)) - {command}:
            continue
        schema = properties.get("timeout")
        schema = schema if isinstance(schema, dict) else {}
        timed = schema.get("type") in ("number", "integer")
        default = schema.get("default")
        if not timed or isinstance(default, bool) or not isinstance(default, int | float):
            default = None
        submit, submit_arg, submit_value = _submit_tool(tools)
        return ShellTool(
            tool.name,
            command,
            "timeout" if timed else None,
            submit,
            submit_arg,
            submit_value,
            None if default is None else float(default),
        )
    listed = ", ".join(sorted(tools)) or "none"
    wanted = f"tool '{name}' taking a string 'command'" if name else "shell tool (a tool taking a string 'command')"
    raise UsageError(f"the environment has no {wanted}; its tools: {listed}")


def shell_only_note(tools: Iterable[str], shell: ShellTool, submit_marker: str | None) -> str:
    """What a harness that has only a shell is told after the environment's prompt.

    Prompts are written for an agent that calls the environment's tools ("call screenshot first",
    "call final_answer with the value"); a harness runs shell commands and nothing else, so it is
    told which tools it does not have and how it does what the prompt's submit tool does: with its
    ``submit_marker`` (the lines after it are the answer, where the tool takes one), or not at all.
    """
    others = [name for name in tools if name not in (shell.name, shell.submit)]
    parts = []
    if others:
        listed = ", ".join(others)
        parts.append(
            "You act through shell commands only; they run in this task's environment. Its other tools "
            f"({listed}) are not available to you: where the task mentions them, use commands instead."
        )
    if shell.submit is not None:
        if submit_marker is None:
            parts.append(
                f"You cannot call {shell.submit}: when you stop, the task is scored as its environment then stands."
            )
        elif shell.submit_arg is not None and shell.submit_value is None:
            parts.append(
                f"To give your answer (what the task calls {shell.submit}), run `echo {submit_marker}` followed by "
                f"the answer alone on the next line, e.g. `printf '%s\\n' {submit_marker} 'ANSWER'`."
            )
        else:
            parts.append(f"When you are done (what the task calls {shell.submit}), run `echo {submit_marker}`.")
    return "\n\n" + " ".join(parts) if parts else ""
