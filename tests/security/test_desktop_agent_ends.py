"""What the agent does to its own desktop ends its episode as its doing: scored, never voided.

A void episode is masked by the trainer, so an agent that can turn its own actions into an
infrastructure failure can erase every episode it is losing. Each attack below is played over the
wire with tool calls only, after the task was done; the episode must end scored (reward 1), with
no failure flag.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Iterator
from typing import Any

import pytest

from omnienv.core import StepResult
from omnienv.envs.desktop.workbook import XML_LIMIT, workbook_xml
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


def text_saved_as_workbook(value_type: str) -> bytes:
    """What the spreadsheet writes when a cell holding this XML is saved as "Text (configurable)", unquoted."""
    cell = f'<gnm:Cell Row="0" Col="0" ValueType="{value_type}">42</gnm:Cell>'
    return workbook_xml("Sheet1", []).replace("<gnm:Cells>", f"<gnm:Cells>{cell}").encode()


def test_a_workbook_the_grader_cannot_read_scores_nothing(server: tuple[str, Any]) -> None:
    """A type of 5,000 digits (past Python's limit on the digits of an int) crashed the check."""
    url, manager = server

    async def run() -> StepResult:
        async with agent(url) as client:
            await client.reset(task="train/spreadsheet-number")
            desktop = live_desktop(manager)
            await desktop.write_file("answer.gnumeric", text_saved_as_workbook("4" * 5000), app="spreadsheet")
            return await act(client, "terminate", status="success")

    result = asyncio.run(run())
    assert result.failure is None, result.failure
    assert result.done and result.reward == 0.0


def test_reading_a_large_workbook_holds_up_no_other_session(server: tuple[str, Any]) -> None:
    """A saved workbook of a few megabytes takes the check a second or more to read: other sessions of
    the server go on meanwhile (it was read on the event loop, which stopped every session's steps)."""
    url, manager = server
    rows: list[list[str | float]] = [["Fruit", "Count"], ["apples", 12], ["pears", 17], ["plums", 9]]
    rows += [[f"filler {index}", index] for index in range(30_000)]
    workbook = gzip.compress(workbook_xml("Sheet1", rows).encode(), 1)
    assert len(gzip.decompress(workbook)) < XML_LIMIT

    async def run() -> tuple[int, StepResult]:
        async with agent(url) as player, agent(url) as other:
            await other.reset(task="train/terminal-echo")
            await player.reset(task="train/spreadsheet-fix-value")
            (session,) = [s for s in manager.sessions.values() if s.env.task.id == "train/spreadsheet-fix-value"]
            await session.env.desktop.write_file("inventory.gnumeric", workbook, app="spreadsheet")
            ending = asyncio.create_task(act(player, "terminate", status="success"))
            answered = 0
            while not ending.done():
                await other.state()
                answered += 1
            return answered, await ending

    answered, result = asyncio.run(run())
    assert result.failure is None and result.reward == 1.0, result
    assert answered >= 20, f"the other session was answered {answered} times while the workbook was read"


def test_a_step_the_agent_may_rightly_take_outlasts_a_shorter_server_deadline() -> None:
    """A command may run its minute: under a server deadline on steps shorter than that (an operator's
    setting), a slow command voided the episode instead of being the agent's to wait for."""

    async def run(url: str) -> StepResult:
        async with agent(url) as client:
            await client.reset(task="train/terminal-echo")
            return await act(client, "run_command", command="sleep 2; echo slept")

    with served_desktop(step_timeout=1.0) as (url, _):
        result = asyncio.run(run(url))
    assert result.failure is None, result.failure
    assert "slept" in result.observation.text
