"""mini-swe-agent's environment for an omnienv episode: every command runs in the episode's sandbox.

mini-swe-agent executes its actions through an environment object (``execute(action, cwd,
timeout)`` returning ``{"output", "returncode", "exception_info"}``; its own ``local`` one runs a
subprocess on the host). This one sends each command to the episode's shell relay instead, so the
command runs with the omnienv environment's shell tool inside its sandbox, and raises
mini-swe-agent's own exceptions when the episode is over: ``Submitted`` after its submit command
(``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``, which the relay turns into the environment's
submit tool), ``LimitsExceeded`` (exit status ``EpisodeOver``) when the environment ended it.

It runs inside mini-swe-agent's process, in that interpreter, so it imports mini-swe-agent only
there (``config: environment_class: omnienv.agents.minisweagent.environment.SessionEnvironment``).
"""

from __future__ import annotations

import importlib
import os
import platform
import shlex
from dataclasses import asdict, dataclass
from typing import Any

from omnienv.agents.shim import URL_VARIABLE, run_command

__all__ = ["SessionEnvironment", "SessionEnvironmentConfig"]

CLASS_PATH = f"{__name__}.SessionEnvironment"


@dataclass(slots=True)
class SessionEnvironmentConfig:
    shell_url: str = ""
    """The episode's relay URL; ``$OMNIENV_SHELL_URL`` when empty."""
    timeout: float | None = None
    """Seconds per command; None leaves it to the environment's shell tool."""
    cwd: str = ""
    """A directory to ``cd`` into before each command; empty: where the episode's shell is."""

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """The config as mini-swe-agent dumps its pydantic ones (templates and trajectories read it)."""
        return asdict(self)


def _interrupt(kind: str, content: str, exit_status: str, submission: str) -> Exception:
    exceptions = importlib.import_module("minisweagent.exceptions")
    message = {"role": "exit", "content": content, "extra": {"exit_status": exit_status, "submission": submission}}
    error: Exception = getattr(exceptions, kind)(message)
    return error


class SessionEnvironment:
    """Runs mini-swe-agent's commands in an omnienv episode's sandbox (see the module's docstring).

    ``env`` (mini-swe-agent's default config sets pager variables) is accepted and not applied:
    the sandbox's shell has the environment's own explicit environment, and no terminal to page on.
    """

    def __init__(
        self,
        *,
        shell_url: str = "",
        timeout: float | None = None,
        cwd: str = "",
        env: dict[str, str] | None = None,
        **_: Any,
    ) -> None:
        self.config = SessionEnvironmentConfig(shell_url or os.environ.get(URL_VARIABLE, ""), timeout, cwd)

    def execute(self, action: dict[str, Any], cwd: str = "", *, timeout: float | None = None) -> dict[str, Any]:
        command = str(action.get("command", ""))
        where = cwd or self.config.cwd
        if where:
            command = f"cd {shlex.quote(where)} && {command}"
        try:
            answer = run_command(self.config.shell_url, command, timeout or self.config.timeout)
        except OSError as exc:
            return {
                "output": "",
                "returncode": -1,
                "exception_info": f"An error occurred while executing the command: {exc}",
                "extra": {"exception_type": type(exc).__name__, "exception": str(exc)},
            }
        output: dict[str, Any] = {"output": answer["output"], "returncode": answer["exit_code"], "exception_info": ""}
        if answer.get("submitted"):
            submission = str(answer["output"]).lstrip().partition("\n")[2]
            raise _interrupt("Submitted", submission, "Submitted", submission)
        if answer.get("over"):
            raise _interrupt("LimitsExceeded", str(answer.get("note") or "the episode is over"), "EpisodeOver", "")
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """What mini-swe-agent's templates read: the config and the machine (``{{system}}``...),
        which is the sandbox's too, since it shares the host's kernel."""
        return {**self.config.model_dump(), **platform.uname()._asdict(), **kwargs}

    def serialize(self) -> dict[str, Any]:
        return {
            "info": {
                "config": {
                    "environment": self.config.model_dump(),
                    "environment_type": CLASS_PATH,
                }
            }
        }
