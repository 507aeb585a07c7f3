"""Loop-owning harnesses on any environment with a shell tool, their commands in its sandbox.

A harness (mini-swe-agent, or any agent CLI a TOML spec describes) owns its model and tool loop;
the runner gives it an episode's instruction, a model URL on the capture proxy (every call recorded
token-exact) and a shell that runs in the episode's sandbox, then scores the episode and writes a
training record (docs/agents.md). The harness definitions need only the core; the runner
(:func:`run_agents`) needs the ``server`` extra and is imported on first use, so mini-swe-agent's
process can load its environment class without the network stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from omnienv.agents.harness import EpisodeContext, Harness, Launch
from omnienv.agents.minisweagent import MiniSweAgent
from omnienv.agents.registry import BUILTIN, load_harness
from omnienv.agents.shell import ShellTool, find_shell_tool
from omnienv.agents.spec import CommandHarness, load_spec

if TYPE_CHECKING:
    from omnienv.agents.runner import AgentEpisode, AgentRun, run_agents

__all__ = [
    "BUILTIN",
    "AgentEpisode",
    "AgentRun",
    "CommandHarness",
    "EpisodeContext",
    "Harness",
    "Launch",
    "MiniSweAgent",
    "ShellTool",
    "find_shell_tool",
    "load_harness",
    "load_spec",
    "run_agents",
]

_RUNNER = frozenset({"AgentEpisode", "AgentRun", "run_agents"})


def __getattr__(name: str) -> Any:
    if name in _RUNNER:
        from omnienv.agents import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
