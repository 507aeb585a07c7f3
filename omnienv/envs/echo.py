"""Echo: the smallest useful environment, for smoke tests and benchmarks of the plumbing."""

from __future__ import annotations

import random

from omnienv.core import Environment, Task, ToolResult, tool


class Echo(Environment):
    """Repeats what the agent says; the episode ends when it says 'bye'."""

    name = "echo"
    max_turns = 100
    blocking = False

    def setup(self, task: Task | None, rng: random.Random) -> str:
        self.said: list[str] = []
        return "Say anything with the `echo` tool; say 'bye' to finish."

    @tool
    def echo(self, message: str) -> ToolResult:
        """Echo a message back.

        Args:
            message: The text to echo.
        """
        self.said.append(message)
        return ToolResult.of(message, reward=0.0, done=message == "bye")

    def state_fields(self) -> dict[str, object]:
        return {"messages": len(self.said)}
