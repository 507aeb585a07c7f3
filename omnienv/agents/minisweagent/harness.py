"""mini-swe-agent as a harness: its own ``mini`` command, its own config, our environment class.

Each episode starts ``python -m minisweagent.run.mini`` (the program behind ``mini``) in the
interpreter that has mini-swe-agent installed, with mini-swe-agent's built-in config (``mini.yaml``:
one bash tool call per turn, submit with ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``) merged
with a per-episode one that the runner writes:

- ``environment``: :class:`~omnienv.agents.minisweagent.environment.SessionEnvironment`, which
  sends each command to the episode's shell relay (the sandbox), never to a host subprocess;
- ``model``: LiteLLM's OpenAI-compatible route, ``openai/<model>`` with ``api_base`` the capture
  proxy's episode URL; cost tracking set to ignore unknown prices (a local model has none);
- ``agent``: the non-interactive ``default`` agent (no confirmations), no cost limit, the
  trajectory written into the episode's directory, where :meth:`MiniSweAgent.outcome` reads its
  exit status and submission;
- ``run.task``: the instruction (in the file, not on the command line, whatever its length).

LiteLLM and mini-swe-agent are kept offline and out of the user's files by environment variables:
``LITELLM_OFFLINE_MODE`` and ``LITELLM_LOCAL_MODEL_COST_MAP`` (the bundled price list, no fetch),
``MSWEA_CONFIGURED`` (no first-run set-up prompt), ``MSWEA_SILENT_STARTUP``, and
``MSWEA_GLOBAL_CONFIG_DIR`` in the episode's directory (no ``~/.config`` reads or writes).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from omnienv.agents.harness import SHIM, EpisodeContext, Launch, base_environ, executable, read_left
from omnienv.agents.minisweagent.environment import CLASS_PATH
from omnienv.core import UsageError

__all__ = ["SUBMIT_MARKER", "MiniSweAgent"]

SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_FOUND = (
    "import importlib.util as u, sys; "
    "sys.exit(0 if u.find_spec('minisweagent') and u.find_spec('omnienv.agents.minisweagent') else 3)"
)


_YAML_ESCAPED = re.compile("[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""What YAML refuses to read, or reads as a line break, in a quoted string: written as an escape."""


def yaml_json(value: Any) -> str:
    """``value`` as JSON that YAML reads back exactly. JSON's own ``\\uXXXX`` escapes of a character
    beyond the BMP are a surrogate pair, which PyYAML reads as two lone halves that no encoder takes
    (an emoji in a task's instruction stopped every model call), so such characters are written as
    they are, and only what YAML cannot hold is escaped."""
    return _YAML_ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, indent=2, ensure_ascii=False))


@dataclass(frozen=True)
class MiniSweAgent:
    """mini-swe-agent run by ``python`` (default: this interpreter), one process per episode.

    ``config`` is the mini-swe-agent config file merged under ours (a built-in name or a path);
    ``step_limit`` its agent's limit on model calls (0: none, the runner's timeout still holds).
    """

    python: str | None = None
    config: str = "mini.yaml"
    step_limit: int = 0
    name: str = "mini-swe-agent"
    submit_marker: str | None = SUBMIT_MARKER
    shell_names: tuple[str, ...] = (SHIM,)

    @property
    def interpreter(self) -> str:
        return self.python or sys.executable

    def check(self) -> None:
        python = executable(self.interpreter)
        if python is None:
            raise UsageError(f"mini-swe-agent: no interpreter '{self.interpreter}'")
        try:
            found = subprocess.run([python, "-c", _FOUND], capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"mini-swe-agent: cannot run {python}: {exc}") from None
        if not found:
            raise UsageError(
                f"mini-swe-agent: {python} cannot import minisweagent and omnienv; install both in one "
                "virtualenv (pip install mini-swe-agent omnienv) and pass its python with --python"
            )

    def launch(self, context: EpisodeContext) -> Launch:
        trajectory = context.workdir / "trajectory.json"
        overlay = {
            "agent": {"agent_class": "default", "step_limit": self.step_limit, "cost_limit": 0},
            "model": {
                "model_class": "litellm",
                "model_name": f"openai/{context.model}",
                "cost_tracking": "ignore_errors",
                "model_kwargs": {"api_base": context.base_url, "api_key": context.api_key, "drop_params": True},
            },
            "environment": {"environment_class": CLASS_PATH, "shell_url": context.shell_url},
            "run": {"task": context.instruction},
        }
        config = context.workdir / "omnienv.yaml"
        config.write_text(yaml_json(overlay), encoding="utf-8")
        env = base_environ(context)
        env.update(
            {
                "MSWEA_CONFIGURED": "1",
                "MSWEA_SILENT_STARTUP": "1",
                "MSWEA_GLOBAL_CONFIG_DIR": str(context.workdir / "mini-swe-agent"),
                "MSWEA_COST_TRACKING": "ignore_errors",
                "LITELLM_OFFLINE_MODE": "true",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "PYTHONUNBUFFERED": "1",
            }
        )
        argv = [self.interpreter, "-m", "minisweagent.run.mini", "-c", self.config, "-c", str(config)]
        argv += ["--exit-immediately", "-o", str(trajectory)]
        return Launch(argv, env)

    def outcome(self, context: EpisodeContext) -> dict[str, Any]:
        """mini-swe-agent's exit status, submission and call count, from its trajectory file."""
        try:
            info = json.loads(read_left(context.workdir / "trajectory.json") or "")["info"]
        except (ValueError, KeyError, TypeError):
            return {"exit_status": None}
        if not isinstance(info, dict):
            return {"exit_status": None}
        stats = info.get("model_stats")
        stats = stats if isinstance(stats, dict) else {}
        return {
            "exit_status": info.get("exit_status"),
            "submission": info.get("submission"),
            "api_calls": stats.get("api_calls"),
            "version": info.get("mini_version"),
        }
