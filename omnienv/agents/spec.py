"""A command-line harness described in a TOML file: any agent CLI, no code of ours in it.

An agent CLI needs four things from a runner, and the spec says how it takes each:

- the command: ``command = ["{python}", "{spec_dir}/agent.py", "--task-file", "{instruction_file}"]``
  (a list, or one string split like a shell would);
- the instruction: ``instruction = "file"`` (written to ``{instruction_file}``), ``"stdin"``, or
  ``"argument"`` (the ``{instruction}`` placeholder in the command);
- its model: the ``[endpoint]`` table names the environment variables it reads for the base URL,
  the API key and the model (OpenAI's by default), which the runner sets to the capture proxy's
  per-episode URL, the key, and ``--model``;
- its shell: commands it runs through ``$SHELL -c`` (or any of ``shell_names`` found first on its
  PATH, e.g. ``["bash", "sh"]``) reach the episode's sandbox through the shim; ``submit_marker``
  is a first output line that submits (``echo THE_MARKER``).

Placeholders, written ``{name}`` in ``command`` and ``[env]`` values: ``instruction``,
``instruction_file``, ``model``, ``base_url``, ``shell``, ``shell_url``, ``workdir``, ``python``
(the runner's interpreter) and ``spec_dir`` (the spec file's directory); other braces stay as they
are. ``timeout_s`` is the default per-episode limit. docs/agents.md has a complete example.
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnienv.agents.harness import SHIM, EpisodeContext, Launch, base_environ, executable
from omnienv.core import UsageError

__all__ = ["CommandHarness", "load_spec"]

_MODES = ("file", "stdin", "argument")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_KNOWN = frozenset(
    {"instruction", "instruction_file", "model", "base_url", "shell", "shell_url", "workdir", "python", "spec_dir"}
)
_ENDPOINT_DEFAULTS = {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY", "model": "OPENAI_MODEL"}


@dataclass(frozen=True)
class CommandHarness:
    """A harness started from a command line (see the module's docstring for the fields)."""

    name: str
    command: tuple[str, ...]
    instruction: str = "file"
    endpoint: dict[str, str] = field(default_factory=lambda: dict(_ENDPOINT_DEFAULTS))
    env: dict[str, str] = field(default_factory=dict)
    submit_marker: str | None = None
    shell_names: tuple[str, ...] = (SHIM,)
    timeout_s: float | None = None
    spec_dir: Path = Path(".")

    def __post_init__(self) -> None:
        if not self.command:
            raise UsageError(f"harness '{self.name}': 'command' is empty")
        if self.instruction not in _MODES:
            raise UsageError(f"harness '{self.name}': instruction must be one of {', '.join(_MODES)}")
        texts = [*self.command, *self.env.values()]
        unknown = {name for text in texts for name in _PLACEHOLDER.findall(text)} - _KNOWN
        if unknown:
            known = ", ".join(sorted(_KNOWN))
            raise UsageError(f"harness '{self.name}': unknown placeholder(s) {sorted(unknown)}; known: {known}")
        if self.instruction == "argument" and not any("{instruction}" in part for part in self.command):
            raise UsageError(f"harness '{self.name}': instruction = 'argument' needs {{instruction}} in the command")
        if set(self.endpoint) - set(_ENDPOINT_DEFAULTS):
            raise UsageError(f"harness '{self.name}': [endpoint] takes only {', '.join(_ENDPOINT_DEFAULTS)}")

    def check(self) -> None:
        program = self._fill(self.command[0], {"python": sys.executable, "spec_dir": str(self.spec_dir)})
        if executable(program) is None:
            raise UsageError(f"harness '{self.name}': cannot find the program '{program}'")

    def launch(self, context: EpisodeContext) -> Launch:
        instruction_file = context.workdir / "instruction.md"
        instruction_file.write_text(context.instruction, encoding="utf-8")
        values = {
            "instruction": context.instruction,
            "instruction_file": str(instruction_file),
            "model": context.model,
            "base_url": context.base_url,
            "shell": str(context.shell),
            "shell_url": context.shell_url,
            "workdir": str(context.workdir),
            "python": sys.executable,
            "spec_dir": str(self.spec_dir),
        }
        env = base_environ(context)
        chosen = {"base_url": context.base_url, "api_key": context.api_key, "model": context.model}
        env.update({variable: chosen[what] for what, variable in self.endpoint.items()})
        env.update({key: self._fill(value, values) for key, value in self.env.items()})
        stdin = context.instruction.encode() if self.instruction == "stdin" else None
        return Launch([self._fill(part, values) for part in self.command], env, stdin)

    def outcome(self, context: EpisodeContext) -> dict[str, Any]:
        return {}

    @staticmethod
    def _fill(text: str, values: dict[str, str]) -> str:
        return _PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), text)


def _strings(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise UsageError(f"{where} must be a table of strings")
    return {str(key): str(item) for key, item in value.items()}


def load_spec(path: Path) -> CommandHarness:
    """The harness a TOML spec file describes; :class:`UsageError` says what is wrong with it."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read the harness spec {path}: {exc}") from None
    allowed = {"name", "command", "instruction", "endpoint", "env", "submit_marker", "shell_names", "timeout_s"}
    if extra := set(data) - allowed:
        raise UsageError(f"{path}: unknown key(s) {sorted(extra)}; allowed: {', '.join(sorted(allowed))}")
    command = data.get("command")
    if isinstance(command, str):
        try:
            command = shlex.split(command)
        except ValueError as exc:  # an unclosed quote or a trailing backslash
            raise UsageError(f"{path}: 'command' cannot be split like a shell line ({exc}); fix its quoting") from None
    if not isinstance(command, list) or not all(isinstance(part, str) for part in command):
        raise UsageError(f"{path}: 'command' must be a string or a list of strings")
    names = data.get("shell_names", [SHIM])
    if not isinstance(names, list) or not all(isinstance(name, str) and "/" not in name for name in names):
        raise UsageError(f"{path}: 'shell_names' must be a list of program names")
    timeout = data.get("timeout_s")
    if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0):
        raise UsageError(f"{path}: 'timeout_s' must be a positive number of seconds")
    marker = data.get("submit_marker")
    if marker is not None and (not isinstance(marker, str) or not marker.strip()):
        raise UsageError(f"{path}: 'submit_marker' must be a non-empty string")
    return CommandHarness(
        name=str(data.get("name") or path.stem),
        command=tuple(command),
        instruction=str(data.get("instruction", "file")),
        endpoint={**_ENDPOINT_DEFAULTS, **_strings(data.get("endpoint", {}), f"{path}: [endpoint]")},
        env=_strings(data.get("env", {}), f"{path}: [env]"),
        submit_marker=marker.strip() if marker else None,
        shell_names=tuple(dict.fromkeys([SHIM, *names])),
        timeout_s=float(timeout) if timeout is not None else None,
        spec_dir=path.resolve().parent,
    )
