"""mini-swe-agent (PyPI ``mini-swe-agent``) as an omnienv harness: the runner's side
(:class:`MiniSweAgent`) and the environment class mini-swe-agent loads in its own process
(:class:`SessionEnvironment`)."""

from omnienv.agents.minisweagent.environment import SessionEnvironment
from omnienv.agents.minisweagent.harness import SUBMIT_MARKER, MiniSweAgent

__all__ = ["SUBMIT_MARKER", "MiniSweAgent", "SessionEnvironment"]
