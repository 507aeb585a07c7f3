"""Attack 5: reward gaming. A check must verify what the agent cannot fake in a call or two.

Window titles are one ``xdotool set_window --name`` (or ``wmctrl -T``) away, so a check that
finds "the calculator" or "the clock" by its title passes when the agent renames another window,
or hides the real one. Each cheat below is played over the wire and must score 0; the scripted
solution of the same task must still score 1.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from omnienv.envs.desktop.player import DesktopScripted
from omnienv.rollout.loop import EpisodePlan, arun_episode
from tests.security._desktop import act, agent, live_desktop, needs_x, served_desktop, until, x_clients

pytestmark = needs_x

CHEATS = {
    "train/open-calculator": [
        "xdotool search --onlyvisible --class xterm set_window --name Calculator %@",
    ],
    "train/close-clock": [
        "xdotool search --name '^xclock$' set_window --name closed-clock --icon-name closed %@",
        "xdotool search --class xclock windowunmap %@",
    ],
    "test/move-clock": [
        "wmctrl -r xclock -T old-clock",
        "xdotool search --onlyvisible --class xterm set_window --name xclock %@",
    ],
}


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    with served_desktop(size=2) as served:
        yield served


@pytest.mark.parametrize("task_id", sorted(CHEATS))
def test_renaming_or_hiding_windows_scores_nothing(server, task_id: str) -> None:  # type: ignore[no-untyped-def]
    url, _ = server

    async def run() -> tuple[list[str], float]:
        async with agent(url) as client:
            await client.reset(task=task_id)
            outputs = []
            for command in CHEATS[task_id]:
                result = await act(client, "run_command", command=command)
                outputs.append(result.observation.text)
            end = await act(client, "terminate", status="success")
            assert end.failure is None, end.failure
            return outputs, end.reward

    outputs, reward = asyncio.run(run())
    assert reward == 0.0, f"the cheat passed {task_id}: {outputs}"


@pytest.mark.parametrize("task_id", sorted([*CHEATS, "train/terminal-select"]))
def test_the_real_solution_still_passes(server, task_id: str) -> None:  # type: ignore[no-untyped-def]
    url, _ = server

    async def run() -> float:
        async with agent(url) as client:
            episode = await arun_episode(client, DesktopScripted(), EpisodePlan(0, task_id, 0))
            assert episode.failure is None, episode.failure
            return episode.reward

    assert asyncio.run(run()) == 1.0


def test_a_selection_made_elsewhere_does_not_count(server) -> None:  # type: ignore[no-untyped-def]
    """terminal-select asks for the word selected in the task's terminal: the same word selected in
    another terminal the agent started, or pushed through the terminal's escape codes, scores 0."""
    url, manager = server

    async def run() -> tuple[tuple[int | None, str] | None, float]:
        async with agent(url) as client:
            await client.reset(task="train/terminal-select")
            desktop = live_desktop(manager)
            await act(client, "left_click", coordinate=[250, 180])
            await act(client, "type", text="printf '\\033]52;p;c2VsZWN0bWU0Mg==\\a'\n")  # OSC 52: set selection
            await act(
                client, "run_command", command="xterm -geometry 30x3+600+300 -e sh -c 'echo selectme42; sleep 100' &"
            )
            other = await until(
                lambda: [
                    w
                    for w in x_clients(desktop.name)
                    if w[2] != desktop.apps["terminal"].pid and "xterm" in w[1].lower()
                ],
                what="the agent's own terminal",
            )
            geometry = next(w for w in await desktop.windows() if w.id == other[0][0])
            await act(client, "double_click", coordinate=[geometry.x + 32, geometry.y + 8])
            selected = await until(desktop.selection, what="a selection in the agent's terminal")
            end = await act(client, "terminate", status="success")
            return selected, end.reward

    selected, reward = asyncio.run(run())
    assert selected is not None and selected[1].strip() == "selectme42", selected  # the cheat did select it
    assert reward == 0.0, "a selection owned by another program passed terminal-select"


def test_a_shell_cannot_reach_the_spreadsheets_own_home(server) -> None:  # type: ignore[no-untyped-def]
    """The spreadsheet saves where no shell of the session can write: the agent's shell looks for
    that home everywhere it can, forges a real workbook with ``ssconvert`` where the task's file
    would be, and still scores 0; the workbook in the spreadsheet's home is untouched."""
    url, manager = server
    forge = (
        "grep -c homes /proc/self/mountinfo; find / -path /proc -prune -o -name budget.gnumeric -print 2>/dev/null; "
        "ls /proc | grep -c '^[0-9]'; "
        "printf 'Item,Cost\\n,\\n,\\n,\\n,\\n,\\n,=SUM(B2:B6)\\n' > /tmp/b.csv && "
        "ssconvert /tmp/b.csv ~/budget.gnumeric 2>/dev/null && echo forged"
    )

    async def run() -> tuple[str, bytes | None, bytes | None, float]:
        async with agent(url) as client:
            await client.reset(task="train/spreadsheet-sum")
            desktop = live_desktop(manager)
            before = await desktop.read_file("budget.gnumeric", "spreadsheet")
            output = (await act(client, "run_command", command=forge)).observation.text
            end = await act(client, "terminate", status="success")
            return output, before, await desktop.read_file("budget.gnumeric", "spreadsheet"), end.reward

    output, before, after, reward = asyncio.run(run())
    lines = output.split()
    assert lines[0] == "0", f"the shell sees the apps' homes mounted: {output}"
    assert "budget.gnumeric" not in output, output
    assert "forged" in output, output  # the forgery itself worked, in the shell's own home
    assert before is not None and before == after
    assert reward == 0.0, "a workbook forged by a shell passed a spreadsheet task"


def test_the_file_manager_offers_no_program_to_start(server) -> None:  # type: ignore[no-untyped-def]
    """Through "open with" or its terminal key the file manager would start a shell with its own home:
    the system's app launchers are hidden from it, and its terminal is switched off."""
    url, manager = server

    async def run() -> tuple[list[str], int]:
        async with agent(url) as client:
            await client.reset(task="test/files-move")
            desktop = live_desktop(manager)
            pid = desktop.apps["files"].pid
            launchers = os.listdir(f"/proc/{pid}/root/usr/share/applications")
            before = len(x_clients(desktop.name))
            await act(client, "left_click", coordinate=[600, 480])
            await act(client, "key", keys="F4")  # "open the current folder in a terminal"
            await act(client, "wait", duration=1.0)
            return launchers, len(x_clients(desktop.name)) - before

    launchers, new_windows = asyncio.run(run())
    assert launchers == [], launchers
    assert new_windows == 0, "the file manager started a program with a window"
