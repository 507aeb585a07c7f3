"""An E2B Desktop sandbox behind the same interface as a local Xvfb display (optional).

E2B's desktop image ships xdotool and wmctrl, so the actions run there as remote command lines,
built only from validated parts: key names from :func:`~omnienv.sandboxes.desktop.parse_keys`
(known keysyms joined by '+'), integers, and typed text passed as one quoted word after ``--``.
The whole VM is the sandbox, so its checks are weaker than a local display's: window owners come
from ``_NET_WM_PID`` (which a client sets itself), the selection's owner is not known, and an
app's home of its own is a folder of the VM's home (``~/.homes/NAME``), which the agent's shell
can write too. The SDK is imported on first use: ``pip install e2b-desktop`` and set ``E2B_API_KEY``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from typing import Any

from omnienv.core.errors import ToolError
from omnienv.core.threads import to_blocking_thread
from omnienv.sandboxes.desktop import (
    BUTTONS,
    CLICK_SETTLE,
    SCROLL_BUTTONS,
    App,
    CommandResult,
    DesktopSession,
    DisplayError,
    Window,
    drag_path,
    key_combo,
    modifiers,
)

__all__ = ["E2BDesktop"]

HOME = "/home/user"


class E2BDesktop(DesktopSession):
    def __init__(self, sandbox: Any, width: int, height: int) -> None:
        self.sandbox = sandbox
        self.width, self.height = width, height
        self.apps: dict[str, App] = {}
        self._closed = False

    @classmethod
    def create(cls, width: int = 1024, height: int = 768, timeout: int = 600, api_key: str | None = None) -> E2BDesktop:
        """Start a sandbox (blocking, seconds); raises DisplayError naming what is missing."""
        try:
            from e2b_desktop import Sandbox
        except ImportError as exc:
            raise DisplayError("the E2B backend needs the SDK: pip install e2b-desktop") from exc
        key = api_key or os.environ.get("E2B_API_KEY")
        if not key:
            raise DisplayError("the E2B backend needs an API key: set E2B_API_KEY")
        try:
            sandbox = Sandbox.create(resolution=(width, height), dpi=96, timeout=timeout, api_key=key)
        except Exception as exc:
            raise DisplayError(f"E2B sandbox did not start: {exc}") from exc
        return cls(sandbox, width, height)

    async def exec(self, argv: Sequence[str | int | float], timeout: float = 30.0) -> CommandResult:
        return await self.shell(shlex.join(map(str, argv)), timeout)

    async def _xdotool(self, *args: str | int | float, timeout: float = 30.0) -> str:
        result = await self.exec(["xdotool", *args], timeout=timeout)
        if result.returncode != 0 or result.timed_out:
            self.require_alive()
            raise ToolError(f"the desktop refused the action: {result.stderr.strip() or result.returncode}")
        return result.stdout

    async def shell(self, command: str, timeout: float = 60.0) -> CommandResult:
        self.require_alive()
        try:
            result = await to_blocking_thread(self.sandbox.commands.run, command, timeout=timeout, cwd=HOME)
        except Exception as exc:
            code = getattr(exc, "exit_code", None)
            if code is None:  # not a command's own failure: the sandbox or the network broke
                raise DisplayError(f"E2B command failed: {exc}") from exc
            return CommandResult(int(code), getattr(exc, "stdout", ""), getattr(exc, "stderr", ""))
        return CommandResult(result.exit_code, result.stdout, result.stderr)

    # -- input: only validated words reach xdotool ---------------------------------------------

    def _held(self, held: str | None) -> tuple[list[str], list[str]]:
        mods = "+".join(modifiers(held))
        return (["keydown", mods], ["keyup", mods]) if mods else ([], [])

    async def click(self, x: int, y: int, button: str = "left", repeat: int = 1, held: str | None = None) -> None:
        down, up = self._held(held)
        await self._xdotool(
            "mousemove",
            x,
            y,
            *down,
            "click",
            "--repeat",
            repeat,
            "--delay",
            60,
            BUTTONS[button],
            *up,
            "sleep",
            CLICK_SETTLE,
        )

    async def move(self, x: int, y: int) -> None:
        await self._xdotool("mousemove", x, y)

    async def mouse_button(self, pressed: bool, at: tuple[int, int] | None = None) -> None:
        move: list[str | int | float] = ["mousemove", at[0], at[1]] if at else []
        await self._xdotool(*move, "mousedown" if pressed else "mouseup", 1)

    async def drag(self, start: tuple[int, int], end: tuple[int, int], held: str | None = None) -> None:
        down, up = self._held(held)
        path: list[str | int | float] = []
        for x, y in drag_path(start, end):
            path += ["mousemove", x, y, "sleep", 0.02]
        await self._xdotool(
            "mousemove",
            *start,
            *down,
            "mousedown",
            1,
            "sleep",
            0.05,
            *path,
            "sleep",
            0.05,
            "mouseup",
            1,
            *up,
            "sleep",
            CLICK_SETTLE,
        )

    async def scroll(self, x: int, y: int, direction: str, amount: int, held: str | None = None) -> None:
        down, up = self._held(held)
        await self._xdotool(
            "mousemove", x, y, *down, "click", "--repeat", amount, "--delay", 20, SCROLL_BUTTONS[direction], *up
        )

    async def type_text(self, text: str) -> None:
        if text:
            await self._xdotool("type", "--delay", 4, "--", text, timeout=60 + len(text) * 0.02)

    async def key(self, keys: str) -> None:
        await self._xdotool("key", "--delay", 20, *key_combo(keys))

    async def hold_key(self, keys: str, seconds: float) -> None:
        names = key_combo(keys)
        await self._xdotool("keydown", *names, "sleep", seconds, "keyup", *reversed(names), timeout=seconds + 30)

    async def cursor(self) -> tuple[int, int]:
        out = await self._xdotool("getmouselocation", "--shell")
        values = dict(line.split("=", 1) for line in out.split() if "=" in line)
        return int(values["X"]), int(values["Y"])

    async def screenshot(self) -> bytes:
        self.require_alive()
        try:
            return bytes(await to_blocking_thread(self.sandbox.screenshot))
        except Exception as exc:
            raise DisplayError(f"E2B screenshot failed: {exc}") from exc

    # -- programs, files, facts ---------------------------------------------------------------

    async def launch(self, command: str, name: str | None = None, *, own_home: bool = False) -> App:
        app_name = name or shlex.split(command)[0]
        home = shlex.quote(self._home(app_name if own_home else None))
        line = f"mkdir -p {home}; cd {home}; HOME={home} {command} >/dev/null 2>&1 & echo $!"  # $!: the app itself
        result = await self.shell(line, timeout=30)
        pid = int(result.stdout.strip()) if result.stdout.strip().isdigit() else None
        app = App(app_name, command, pid, own_home=own_home)
        self.apps[app.name] = app
        return app

    async def place(self, name: str, x: int, y: int, width: int, height: int) -> None:
        windows = await self.app_windows(name)
        if not windows:
            raise DisplayError(f"the app {name!r} shows no window to place")
        await self.exec(["wmctrl", "-i", "-r", hex(windows[0].id), "-e", f"0,{x},{y},{width},{height}"])
        await self.wait_placed(name, x, y, width)

    @staticmethod
    def _home(app: str | None) -> str:
        return HOME if app is None else f"{HOME}/.homes/{app}"

    async def app_alive(self, name: str) -> bool:
        app = self.apps.get(name)
        return app is not None and app.pid is not None and (await self.exec(["kill", "-0", app.pid])).returncode == 0

    async def in_session(self, pid: int) -> bool:
        return True  # the whole VM is the session's

    async def windows(self) -> list[Window]:
        listed = await self.exec(["wmctrl", "-lpGx"])
        windows = []
        for line in listed.stdout.splitlines():
            fields = line.split(None, 8)
            if len(fields) < 8 or not fields[2].isdigit():
                continue
            wid, _, pid, x, y, width, height, klass = fields[:8]
            windows.append(
                Window(
                    int(wid, 16),
                    fields[8] if len(fields) > 8 else "",
                    klass.split(".")[-1],
                    int(x),
                    int(y),
                    int(width),
                    int(height),
                    True,
                    int(pid) or None,
                )
            )
        return windows

    async def read_file(self, path: str, app: str | None = None) -> bytes | None:
        if await self.path_kind(path, app) != "file":
            return None
        try:
            data = await to_blocking_thread(self.sandbox.files.read, f"{self._home(app)}/{path}", format="bytes")
        except Exception:
            return None
        return bytes(data)

    async def write_file(self, path: str, data: bytes, app: str | None = None) -> None:
        await to_blocking_thread(self.sandbox.files.write, f"{self._home(app)}/{path}", data)

    async def path_kind(self, path: str, app: str | None = None) -> str | None:
        quoted = shlex.quote(f"{self._home(app)}/{path}")
        probe = await self.shell(
            f"if [ -L {quoted} ]; then echo symlink; elif [ -d {quoted} ]; then echo dir; "
            f"elif [ -f {quoted} ]; then echo file; elif [ -e {quoted} ]; then echo other; fi"
        )
        kind = probe.stdout.strip()
        return kind or None

    def alive(self) -> bool:
        return not self._closed

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await to_blocking_thread(self.sandbox.kill)
