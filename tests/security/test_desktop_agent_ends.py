"""What the agent does to its own desktop ends its episode as its doing: scored, never voided.

A void episode is masked by the trainer, so an agent that can turn its own actions into an
infrastructure failure can erase every episode it is losing. Each attack below is played over the
wire with tool calls only, after the task was done; the episode must end scored (reward 1), with
no failure flag.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from omnienv.core import StepResult
from tests.security._desktop import act, agent, live_desktop, needs_x, served_desktop, until

pytestmark = needs_x

DONE = "echo hello-rl > ~/hello.txt"
"""train/terminal-echo, solved."""


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Any]]:
    with served_desktop(size=2) as served:
        yield served


@pytest.mark.parametrize(
    "attack",
    [
        ("key", {"keys": "Terminate_Server"}),
        ("run_command", {"command": "xdotool key Terminate_Server"}),
    ],
    ids=["key-tool", "program"],
)
def test_terminating_the_x_server_is_the_agents_doing(
    server: tuple[str, Any], attack: tuple[str, dict[str, Any]]
) -> None:
    """XKB's Terminate action (the keysym ``Terminate_Server``, mapped by whoever presses it) makes the
    X server exit: the agent ended its own desktop."""
    url, manager = server
    tool, arguments = attack

    async def run() -> StepResult:
        async with agent(url) as client:
            await client.reset(task="train/terminal-echo")
            desktop = live_desktop(manager)
            assert not (await act(client, "run_command", command=DONE)).observation.is_error
            result = await act(client, tool, **arguments)
            await until(lambda: not desktop.server.alive(), what="the X server gone")
            if not result.done:
                result = await act(client, "screenshot")
            return result

    result = asyncio.run(run())
    assert result.failure is None, result.failure
    assert result.done and "ended_by_agent" in result.info, result
    assert result.reward == 1.0, result.info
