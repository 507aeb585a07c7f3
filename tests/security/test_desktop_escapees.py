"""Attack 4: nothing the agent starts may outlive its episode, however it detaches.

The agent detaches processes every way a shell allows (``setsid env -i``, a double fork,
``nohup``) from ``run_command``, from the task's terminal and from a terminal it opened with the
window manager's menu. Once the session is closed, none of them may exist on the host.
"""

from __future__ import annotations

import asyncio
import uuid

from tests.security._desktop import (
    act,
    agent,
    live_desktop,
    needs_x,
    processes_with,
    served_desktop,
    until,
    x_clients,
)

pytestmark = needs_x


def detach_all(marker: str, where: str) -> str:
    """Three detached sleepers whose command lines carry ``marker``."""
    return (
        f"setsid env -i sh -c 'sleep 1000; : {marker}-{where}-setsid' >/dev/null 2>&1 & "
        f"( ( sh -c 'sleep 1000; : {marker}-{where}-fork' >/dev/null 2>&1 & ) & ); "
        f"nohup sh -c 'sleep 1000; : {marker}-{where}-nohup' >/dev/null 2>&1 & "
        "true"
    )


def test_detached_processes_die_with_the_episode() -> None:
    marker = f"escapee-{uuid.uuid4().hex}"
    with served_desktop() as (url, manager):

        async def run() -> None:
            async with agent(url) as client:
                await client.reset(task="train/terminal-echo")
                desktop = live_desktop(manager)
                before = {window for window, _, _ in x_clients(desktop.name)}
                await act(client, "run_command", command=detach_all(marker, "cmd"))
                await act(client, "left_click", coordinate=[250, 180])  # the task's terminal
                await act(client, "type", text=detach_all(marker, "xterm") + "\n")
                for attempt in range(3):  # keys sent before the menu has mapped go nowhere: open it again
                    await act(client, "right_click", coordinate=[800, 600])  # the window manager's menu
                    await act(client, "key", keys="Down")
                    await act(client, "key", keys="Return")
                    try:
                        await until(
                            lambda: [
                                c for c in x_clients(desktop.name) if c[0] not in before and "xterm" in c[1].lower()
                            ],
                            timeout=8,
                            what="a terminal from the root menu",
                        )
                        break
                    except AssertionError:
                        if attempt == 2:
                            raise
                        await act(client, "key", keys="Escape")
                await act(client, "type", text=detach_all(marker, "menu") + "\n")
                await until(lambda: len(processes_with(marker)) >= 9, what="nine detached processes")

        asyncio.run(run())
        # The session is closed (its WebSocket is gone); its display is reaped in the background.
        try:
            asyncio.run(until(lambda: not processes_with(marker), timeout=20, what="every escapee gone"))
        except AssertionError:
            raise AssertionError(f"processes outlived their episode: {processes_with(marker)}") from None
