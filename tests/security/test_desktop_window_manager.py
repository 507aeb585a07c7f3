"""Attack 2: the window manager's own menu must not open a terminal on the host.

Clicks and keys alone: a right click on the empty desktop opens openbox's root menu, whose first
entry starts a terminal. The terminal must start inside the session's sandbox, so what the agent
types there cannot touch the host.
"""

from __future__ import annotations

import asyncio
import os

from tests.security._desktop import act, agent, host_marker, live_desktop, needs_x, served_desktop, until, x_clients

pytestmark = needs_x

SHADOW_LINE = "root:"


def test_the_root_menus_terminal_runs_in_the_sandbox() -> None:
    marker = host_marker()
    root_marker = f"/root/{os.path.basename(marker)}"
    with served_desktop() as (url, manager):

        async def run() -> None:
            async with agent(url) as client:
                await client.reset(task="train/terminal-echo")
                desktop = live_desktop(manager)
                before = {window for window, _, _ in x_clients(desktop.name)}
                assert not (await act(client, "right_click", coordinate=[800, 600])).observation.is_error
                await act(client, "key", keys="Down")
                await act(client, "key", keys="Return")

                def new_terminal() -> list[tuple[int, str, int | None]]:
                    return [c for c in x_clients(desktop.name) if c[0] not in before and "xterm" in c[1].lower()]

                (_, _, pid), *_ = await until(new_terminal, what="a terminal from the root menu")
                command = (
                    f"touch {marker} {root_marker}; cat /etc/shadow > ~/shadow.txt 2>&1; "
                    "ls /root > ~/root.txt 2>&1; echo done > ~/proof.txt\n"
                )
                await act(client, "type", text=command)
                proof = await until(lambda: desktop.read_file("proof.txt"), what="the terminal running the command")
                assert proof == b"done\n"
                assert not os.path.exists(marker) and not os.path.exists(root_marker), "the terminal reached the host"
                shadow = (await desktop.read_file("shadow.txt")) or b""
                assert SHADOW_LINE.encode() not in shadow, "the terminal read the host's /etc/shadow"
                assert pid is not None and pid in desktop.sandbox.pids(), "the terminal is not in the sandbox"

        asyncio.run(run())
    assert not os.path.exists(marker) and not os.path.exists(root_marker)
