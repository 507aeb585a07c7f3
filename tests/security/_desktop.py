"""Attacking a served desktop as an agent would: tools over the WebSocket, the host watched from outside.

Every test here starts a real server in-process (``running(create_app(...))``) on a pool of real
Xvfb displays of its own, and plays only tool calls through :class:`AsyncWebSocketClient`. What
the host shows afterwards (files, processes, mounts, cgroups) is read straight from the host.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest

from omnienv.app import create_app
from omnienv.client.websocket import AsyncWebSocketClient
from omnienv.core import StepResult, ToolCall
from omnienv.envs.desktop import Desktop
from omnienv.sandboxes.xvfb import DisplayPool, DisplaySpec, missing_programs
from omnienv.server import running

needs_x = pytest.mark.skipif(
    bool(
        missing_programs(
            (
                "Xvfb",
                "openbox",
                "xterm",
                "xclock",
                "xcalc",
                "xedit",
                "gnumeric",
                "pcmanfm",
                "bwrap",
                "xdotool",
                "wmctrl",
            )
        )
    ),
    reason="X programs or bubblewrap missing: run 'make system-deps'",
)


def desktop_class(pool: DisplayPool) -> type[Desktop]:
    """A Desktop whose sessions take their displays from ``pool`` (a server builds envs without arguments)."""

    class PooledDesktop(Desktop):
        name = "desktop"

        def __init__(self) -> None:
            super().__init__(pool=pool)

    return PooledDesktop


@contextmanager
def served_desktop(spec: DisplaySpec | None = None, size: int = 1, **config: Any) -> Iterator[tuple[str, Any]]:
    """A desktop server on a free port and its session manager; the pool and server always stop."""
    pool = DisplayPool(spec or DisplaySpec(), size=size)
    try:
        app = create_app(desktop_class(pool), **config)
        with running(app) as url:
            yield url, app.state.manager
    finally:
        pool.close()


@asynccontextmanager
async def agent(url: str) -> AsyncIterator[AsyncWebSocketClient]:
    client = await AsyncWebSocketClient.connect(url)
    try:
        yield client
    finally:
        await client.close()


async def act(client: AsyncWebSocketClient, tool: str, **arguments: Any) -> StepResult:
    return await client.step(ToolCall(tool, dict(arguments)))


def live_desktop(manager: Any) -> Any:
    """The display of the server's only session (for checks from the host side)."""
    sessions = list(manager.sessions.values())
    assert len(sessions) == 1, sessions
    return sessions[0].env.desktop


def host_marker(prefix: str = "omnienv-pwned") -> str:
    """A path on the host that must never come into existence."""
    return f"/tmp/{prefix}-{uuid.uuid4().hex}"


async def until(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """Poll ``predicate`` (sync or async) until it returns something truthy, or fail."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout:g} s")
        await asyncio.sleep(0.02)


def processes_with(marker: str) -> list[tuple[int, str]]:
    """Live (non-zombie) processes whose command line holds ``marker``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{entry.name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append((int(entry.name), cmdline))
    return found


def x_clients(display: str) -> list[tuple[int, str, int | None]]:
    """(window id, WM_CLASS class, owning client's host pid) of every top-level client window, as the
    X server itself reports them (X-Resource), independent of omnienv's own code."""
    from Xlib import X
    from Xlib import display as xdisplay
    from Xlib.ext import res

    connection = xdisplay.Display(display)
    try:
        found = []
        todo = list(connection.screen().root.query_tree().children)
        while todo:
            window = todo.pop()
            try:
                if window.get_attributes().map_state != X.IsViewable:
                    continue
                wm_class = window.get_wm_class()
                if wm_class is None:
                    todo.extend(window.query_tree().children)  # a frame: the client is inside
                    continue
                ids = connection.res_query_client_ids([{"client": window.id, "mask": res.LocalClientPIDMask}])
                pids = [value for item in ids.ids for value in item.value]
                found.append((window.id, wm_class[1], pids[0] if pids else None))
            except Exception:  # a window that went away meanwhile
                continue
        return found
    finally:
        connection.close()
