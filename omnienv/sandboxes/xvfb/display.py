"""One local desktop: an Xvfb server in a sandbox of its own, everything else in the session's one sandbox.

- **The X server** (:mod:`~omnienv.sandboxes.xvfb.server`): fixed arguments, no TCP, no shared
  memory, a host user of its own and a sandbox that shows the host's system only; its socket is
  the only way to the display.
- **Every X client of the session** (the window manager, the task's apps, the agent's shell and
  whatever they start, a terminal opened from the window manager's menu included) starts through
  :meth:`Sandbox.spawn <omnienv.sandboxes.sandbox.Sandbox.spawn>`: bubblewrap, the sandbox's
  cgroup, an explicit environment, and the display's socket file bound in read-only, alone.
- **Input and window facts** go through the host's own X connection
  (:mod:`~omnienv.sandboxes.xvfb.xclient`): XTEST and X-Resource, no process per action.
- **Files** of the home directory (the sandbox's work dir), and of the homes of their own that
  some apps get (:mod:`~omnienv.sandboxes.xvfb.homes`), are read and written by the host without
  following symlinks; the agent's commands go through pipes (:mod:`~omnienv.sandboxes.xvfb.shell`).

A machine that cannot run bubblewrap cannot run a desktop: :meth:`XvfbDisplay.start` refuses with
:class:`~omnienv.sandboxes.bubblewrap.SandboxUnavailableError`, never runs anything unsandboxed.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from omnienv.core.errors import AgentCausedEnd
from omnienv.core.threads import to_blocking_thread
from omnienv.sandboxes.bubblewrap import HOME, Limits
from omnienv.sandboxes.desktop import App, CommandResult, DisplayError, Window
from omnienv.sandboxes.procfs import cpu_ticks, running
from omnienv.sandboxes.sandbox import Sandbox
from omnienv.sandboxes.xvfb.capture import Grabber
from omnienv.sandboxes.xvfb.homes import Homes
from omnienv.sandboxes.xvfb.input import XInput
from omnienv.sandboxes.xvfb.launch import AppLog, on_spawner, program_pid, require_sandbox
from omnienv.sandboxes.xvfb.server import SOCKETS, XServer, missing_programs
from omnienv.sandboxes.xvfb.shell import SandboxShell
from omnienv.sandboxes.xvfb.xclient import XClient, XConnectionLost

__all__ = ["PREFIX", "DisplaySpec", "XvfbDisplay"]

T = TypeVar("T")
PREFIX = "omnienv-desktop-"
X_TIMEOUT = 30.0
"""Seconds the slow X calls of one step (see :data:`SLOW_CALL`) may wait in all; past that a client on
the display holds the server (XGrabServer) or floods it."""
SLOW_CALL = 2.0
"""A call slower than this counts toward the step's :data:`X_TIMEOUT`: a client that held the server
again and again, each time a little less than the deadline, made every call of a step wait nearly
all of it (a drag makes a dozen), past the server's deadline on a step, which voids the episode."""
READ_LIMIT = 16 * 1024 * 1024
QUIET = 0.15
"""Seconds without CPU use after which a starting app counts as ready."""
LAUNCHERS = "/usr/share/applications"
"""Hidden from apps with a home of their own: through these entries an app's "open with" or a
link it follows starts any program (a terminal) in the app's sandbox, with the app's home."""
SYSTEM_CONFIG = ("/etc/X11", "/etc/xdg", "/var/cache/fontconfig")
"""Read-only in every sandbox when present: app defaults (xcalc's keys, xterm's menus), openbox's rc
and menu, and the font cache (without it every app rescans the fonts: a third of a second)."""


@dataclass(frozen=True, slots=True)
class DisplaySpec:
    """What a display looks like; pools are shared per spec."""

    width: int = 1024
    height: int = 768
    depth: int = 24
    window_manager: str | None = "openbox"
    start_timeout: float = 10.0
    limits: Limits | None = None
    """The session sandbox's limits (memory, processes, CPU, work-dir size); None for the defaults."""


class XvfbDisplay(XInput):
    """One display: its X server, its sandbox (home = the sandbox's work dir) and what runs there."""

    def __init__(self, spec: DisplaySpec, sandbox: Sandbox, server: XServer) -> None:
        self.spec = spec
        self.width, self.height = spec.width, spec.height
        self.sandbox = sandbox
        self.server = server
        self.x = XClient(server.name)
        self.apps: dict[str, App] = {}
        self.window_manager: subprocess.Popen[bytes] | None = None
        self._grabber = Grabber(server.name)
        self._log = AppLog()
        self._shell = SandboxShell(self._start_shell)
        self.homes = Homes(sandbox.work_dir, sandbox.run_dir / "homes")
        self._no_launchers = sandbox.run_dir / "no-launchers"
        self._no_launchers.mkdir()
        self._stuck = False
        self._waited = 0.0
        # X calls run on the display's own thread, not the loop's default pool: a call stuck behind a
        # client's XGrabServer must hold up neither other sessions nor the loop's shutdown.
        self._x_thread = ThreadPoolExecutor(1, thread_name_prefix=f"omnienv-x{server.number}")
        self._closed = False
        self._close_lock = threading.Lock()
        self.env = {
            "DISPLAY": server.name,
            "HOME": HOME,
            "USER": "user",
            "LOGNAME": "user",
            "LANG": "C.UTF-8",
            "TERM": "xterm",
            "SHELL": "/bin/bash",
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "NO_AT_BRIDGE": "1",  # GTK apps: no accessibility bus to look for (there is no D-Bus)
        }
        (sandbox.run_dir / "passwd").write_text("user:x:1000:1000::/home/user:/bin/bash\n")
        (sandbox.run_dir / "group").write_text("user:x:1000:\n")
        self._read_only = [path for path in SYSTEM_CONFIG if os.path.isdir(path)]
        self._files = [
            (str(server.socket_dir), SOCKETS),
            (str(sandbox.run_dir / "passwd"), "/etc/passwd"),
            (str(sandbox.run_dir / "group"), "/etc/group"),
        ]

    name = property(lambda self: self.server.name)
    number = property(lambda self: self.server.number)
    process = property(lambda self: self.server.process, doc="The X server's sandbox, which lives as long as Xvfb.")
    root = property(lambda self: self.sandbox.root)
    home = property(lambda self: self.sandbox.work_dir, doc="The home directory (/home/user inside).")

    def __repr__(self) -> str:
        return f"XvfbDisplay({self.name}, {self.width}x{self.height}, {self.sandbox!r})"

    # -- lifecycle (blocking: pools call these from threads) ---------------------------------

    @classmethod
    def start(cls, spec: DisplaySpec = DisplaySpec()) -> XvfbDisplay:
        """Start Xvfb, the session's sandbox and its window manager; return once windows are managed."""
        needed = ["Xvfb", "bwrap", *([spec.window_manager] if spec.window_manager else [])]
        missing = missing_programs(needed)
        if missing:
            raise DisplayError(
                f"missing programs {', '.join(missing)}: run 'make system-deps' "
                "(apt-get install bubblewrap xvfb openbox xterm x11-apps)"
            )
        require_sandbox()
        deadline = time.monotonic() + spec.start_timeout
        sandbox = Sandbox(spec.limits, prefix=PREFIX)
        log = sandbox.run_dir / "xvfb.log"
        try:
            server = XServer.start(
                spec.width,
                spec.height,
                spec.depth,
                log,
                deadline,
                sandbox.limits.memory_bytes,
                sandbox.run_dir / "x11",
                sandbox.covers(),
            )
        except BaseException:
            sandbox.close()
            raise
        display = cls(spec, sandbox, server)
        try:
            # What clients make the server do counts against the session. Xvfb alone: its bwrap, left
            # out of the session's kills, reaps it at once (a bwrap killed with it would leave it to init).
            sandbox.cgroup.add(server.pid)
            server.watch(sandbox.root, sandbox.cgroup.dirs)
            if spec.window_manager:
                display._start_window_manager(deadline)
        except BaseException:
            display.close_now()
            raise
        return display

    def spawn(
        self,
        argv: Sequence[str],
        *,
        stdin: int | IO[Any] | None = subprocess.DEVNULL,
        stdout: int | IO[Any] | None = None,
        own_home: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` in the session's sandbox, on this display (the only way anything starts).

        With ``own_home`` (a directory of :attr:`homes`), that directory is the program's home
        instead of the session's, and the system's app launchers are hidden from it.
        """
        if not self.alive():
            raise DisplayError(f"display {self.name} is gone")
        files, binds = list(self._files), []
        if own_home is not None:
            binds.append((str(own_home), HOME))
            if os.path.isdir(LAUNCHERS):
                files.append((str(self._no_launchers), LAUNCHERS))
        try:
            return on_spawner(
                lambda: self.sandbox.spawn(
                    list(argv),
                    env=self.env,
                    read_only=self._read_only,
                    files=files,
                    binds=binds,
                    stdin=stdin,
                    stdout=self._log.write_fd if stdout is None else stdout,
                    stderr=self._log.write_fd,
                )
            )
        except RuntimeError as exc:  # the sandbox closed under us
            raise DisplayError(f"display {self.name} is gone: {exc}") from exc

    def _start_window_manager(self, deadline: float) -> None:
        manager = self.spec.window_manager or ""
        self.window_manager = self.spawn([manager])

        def running() -> bool:
            return self.server.alive() and self.window_manager is not None and self.window_manager.poll() is None

        if not self.x.wait_managed(deadline, running):
            raise DisplayError(f"window manager {manager!r} did not start on {self.name}{self.diagnosis()}")

    def _start_shell(self) -> subprocess.Popen[bytes]:
        return self.spawn(["bash", "--noprofile", "--norc", "-s"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def alive(self) -> bool:
        return not self._closed and self.server.alive()

    def require_alive(self) -> None:
        if self.alive():
            return
        if not self._closed and self.server.killed and self.sandbox.memory_limit_hits():
            raise AgentCausedEnd(
                "the desktop ran out of memory: the session's programs together (the X server's "
                "work for them included) hit its limit",
                reason="memory_limit",
            )
        if not self._closed and self.server.told_to_end:  # the host stops it only when closing
            raise AgentCausedEnd(
                "the X server was told to terminate (a key bound to its Terminate action): the desktop is gone",
                reason="display_terminated",
            )
        raise DisplayError("the desktop display died")

    def diagnosis(self) -> str:
        said = self._log.tail() or self.server.tail()
        return f"; the apps said: {said}" if said else ""

    def close_now(self) -> None:
        """Kill every process of the session, the X server, and delete every file; idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._shell.close()
        self.x.abort()
        self._x_thread.shutdown(wait=False)
        # The session's clients first: one of them may hold the server (XGrabServer), and our own
        # connections would wait on it.
        self.sandbox.close()
        self.x.close()
        self._grabber.close()
        self.server.stop()
        self._log.close()

    async def close(self) -> None:
        await to_blocking_thread(self.close_now)

    # -- calls into X with a deadline ---------------------------------------------------------

    async def _blocking(self, fn: Callable[..., T], *args: Any) -> T:
        self.require_alive()
        if self._stuck:
            raise AgentCausedEnd("the display does not answer any more", reason="display_unresponsive")
        started = time.monotonic()
        try:
            call = asyncio.get_running_loop().run_in_executor(self._x_thread, fn, *args)
            result = await asyncio.wait_for(call, max(0.0, X_TIMEOUT - self._waited))
        except TimeoutError:
            self.x.abort()  # frees the worker thread stuck on the held server
            self.require_alive()
            self._stuck = True
            raise AgentCausedEnd(
                f"the display kept the desktop waiting for {X_TIMEOUT:g} s: a program on it holds the "
                "X server (XGrabServer) or floods it",
                reason="display_unresponsive",
            ) from None
        except XConnectionLost as exc:
            self.require_alive()  # a dead server is infrastructure; a live one lost us to a client's XKillClient
            raise AgentCausedEnd(
                f"a program on the display keeps disconnecting the desktop's own connection ({exc})",
                reason="display_connection_killed",
            ) from exc
        took = time.monotonic() - started
        if took > SLOW_CALL:
            self._waited += took
        return result

    def begin_step(self) -> None:
        self._waited = 0.0

    def screenshot_png(self) -> bytes:
        """Capture and encode (blocking, about 4 ms at 1024x768)."""
        self.require_alive()
        return self._grabber.png()

    async def screenshot(self) -> bytes:
        return await self._blocking(self.screenshot_png)

    # -- programs ----------------------------------------------------------------------------

    async def shell(self, command: str, timeout: float = 60.0) -> CommandResult:
        """Run ``command`` with bash in the home directory, in the sandbox, as a terminal would."""
        self.require_alive()
        cancelled = threading.Event()
        try:
            return await to_blocking_thread(self._shell.run, command, timeout, cancelled)
        finally:
            cancelled.set()  # a cancelled call kills the shell instead of leaving it running

    async def launch(self, command: str, name: str | None = None, *, own_home: bool = False) -> App:
        argv = shlex.split(command)
        app_name = name or argv[0]
        home = self.homes.of(app_name) if own_home else None
        process = await to_blocking_thread(lambda: self.spawn(argv, own_home=home))
        pid = await to_blocking_thread(program_pid, process)
        app = App(app_name, command, pid, process, own_home)
        self.apps[app.name] = app
        return app

    async def wait_settled(self, name: str, timeout: float = 10.0) -> None:
        """Poll until the app has used no CPU for :data:`QUIET` seconds: it has drawn its window and
        waits for input (a spreadsheet loading its document is busy for a second)."""
        app = self.apps.get(name)
        if app is None or app.pid is None:
            return
        deadline = time.monotonic() + timeout
        used, quiet_since = cpu_ticks(app.pid), time.monotonic()
        while time.monotonic() < deadline and used is not None:
            await asyncio.sleep(0.02)
            now = cpu_ticks(app.pid)
            if now != used:
                used, quiet_since = now, time.monotonic()
            elif time.monotonic() - quiet_since >= QUIET:
                return

    async def place(self, name: str, x: int, y: int, width: int, height: int) -> None:
        windows = await self.app_windows(name)
        if not windows:
            raise DisplayError(f"the app {name!r} shows no window to place")
        await self._blocking(self.x.configure, windows[0].id, x, y, width, height)
        await self.wait_placed(name, x, y, width)

    async def app_alive(self, name: str) -> bool:
        app = self.apps.get(name)
        return (
            app is not None
            and isinstance(app.handle, subprocess.Popen)
            and app.handle.poll() is None
            and running(app.pid)
        )

    def pids(self) -> set[int]:
        """Every process of the session: the sandbox's (the X server is in its cgroup, for the limits)."""
        return self.sandbox.pids() if not self._closed else set()

    async def in_session(self, pid: int) -> bool:
        return pid in self.pids()

    # -- facts for checkers --------------------------------------------------------------------

    async def windows(self) -> list[Window]:
        return await self._blocking(self.x.windows)

    async def selection(self, owner: str | None = None) -> tuple[int | None, str] | None:
        app = self.apps.get(owner) if owner else None
        if owner is not None and app is None:
            return None
        return await self._blocking(self.x.selection, lambda pid: app is None or pid == app.pid)

    # -- files of the homes, never through a symlink ------------------------------------------

    async def read_file(self, path: str, app: str | None = None) -> bytes | None:
        return self.homes.read(app, path, READ_LIMIT)

    async def write_file(self, path: str, data: bytes, app: str | None = None) -> None:
        self.homes.write(app, path, data)

    async def path_kind(self, path: str, app: str | None = None) -> str | None:
        return self.homes.kind(app, path)
