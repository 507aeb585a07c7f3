"""Local desktops: one Xvfb display per session, a light window manager, xdotool for input.

Why these parts:

- ``Xvfb -displayfd`` picks a free display number itself and writes it once the server accepts
  connections, so there is no guessing of numbers and no readiness polling.
- Every process of a display (server, window manager, apps, commands) runs in the display's
  process group *and* carries a tag in its environment. Killing the group reaps the common case;
  sweeping ``/proc`` for the tag catches what escaped the group (xterm's shell calls ``setsid``).
- Screenshots go through ``mss`` (XShmGetImage over shared memory: no pixel copy over the X socket)
  and are encoded as PNG at zlib level 1: a 1024x768 desktop costs a few milliseconds.
- A watchdog process per display reaps it if the Python process dies without closing it.
- Apps and the agent's commands run in bubblewrap when the machine allows it (read-only system,
  writable home, no network, only this display's X socket); the X server, window manager and
  xdotool run outside, with fixed arguments.
- Starting Xvfb and a window manager takes a few hundred milliseconds, so :class:`DisplayPool`
  keeps displays warm in background threads (threads, not asyncio tasks, so one pool serves any
  number of event loops).

:class:`XvfbDisplay` is a :class:`~omnienv.sandboxes.desktop.DesktopSession`: the input actions
come from there, written once over ``exec``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnienv.core.errors import ToolError
from omnienv.sandboxes.desktop import CommandResult, DesktopSession, DisplayError

__all__ = [
    "REQUIRED_PROGRAMS",
    "TAG_VARIABLE",
    "DisplayPool",
    "DisplaySpec",
    "XvfbDisplay",
    "missing_programs",
    "shared_pool",
    "tagged_pids",
]

logger = logging.getLogger("omnienv.desktop")

TAG_VARIABLE = "OMNIENV_DESKTOP"
REQUIRED_PROGRAMS = ("Xvfb", "xdotool", "wmctrl")
OUTPUT_LIMIT = 10_000


def missing_programs(programs: Sequence[str] = REQUIRED_PROGRAMS) -> list[str]:
    return [name for name in programs if shutil.which(name) is None]


@dataclass(frozen=True, slots=True)
class DisplaySpec:
    """What a display looks like; pools are shared per spec."""

    width: int = 1024
    height: int = 768
    depth: int = 24
    window_manager: str | None = "openbox"
    start_timeout: float = 10.0
    sandbox: bool | None = None
    """Run apps and commands in bubblewrap: True requires it, None uses it when the machine can."""


# -- local displays ------------------------------------------------------------------------------


def tagged_pids(tag: str) -> list[int]:
    """Every live process whose environment carries ``tag`` (zombies have no environment)."""
    needle = f"{TAG_VARIABLE}={tag}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                if needle in handle.read():
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def _read_display_number(fd: int, process: subprocess.Popen[bytes], deadline: float) -> int:
    buffer = b""
    while not buffer.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DisplayError("Xvfb did not report a display number in time")
        ready, _, _ = select.select([fd], [], [], min(remaining, 0.5))
        if ready:
            chunk = os.read(fd, 64)
            if not chunk:
                break
            buffer += chunk
        elif process.poll() is not None:
            break
    if not buffer.strip().isdigit():
        raise DisplayError(f"Xvfb exited (code {process.poll()}) before reporting a display number")
    return int(buffer)


class XvfbDisplay(DesktopSession):
    """One local Xvfb display with its own home directory, window manager and process group."""

    def __init__(self, spec: DisplaySpec, process: subprocess.Popen[bytes], number: int,
                 root: Path, tag: str, env: dict[str, str]) -> None:
        self.spec = spec
        self.width, self.height = spec.width, spec.height
        self.process = process
        self.number = number
        self.root = root
        self.home = root / "home"
        self.tag = tag
        self.env = env
        self.children: list[subprocess.Popen[bytes]] = []
        self._grabber: Any = None
        self._grab_lock = threading.Lock()
        self._closed = False
        self._lifeline = -1
        self.sandboxed = False
        self._session: subprocess.Popen[bytes] | None = None
        self._runs = root / "runs"
        self._run_count = 0

    @property
    def name(self) -> str:
        return f":{self.number}"

    @property
    def pgid(self) -> int:
        return self.process.pid

    def __repr__(self) -> str:
        return f"XvfbDisplay({self.name}, {self.width}x{self.height}, pid={self.process.pid})"

    # -- lifecycle (blocking: pools call these from threads) ---------------------------------

    @classmethod
    def start(cls, spec: DisplaySpec = DisplaySpec()) -> XvfbDisplay:
        """Start Xvfb and the window manager; return once both are ready."""
        missing = missing_programs()
        if missing:
            raise DisplayError(f"missing programs {', '.join(missing)}: run 'make system-deps' "
                               "(apt-get install xvfb xdotool wmctrl openbox xterm x11-apps)")
        root = Path(tempfile.mkdtemp(prefix="omnienv-desktop-"))
        (root / "home").mkdir()
        tag = uuid.uuid4().hex
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(root / "home"), "USER": os.environ.get("USER", "user"),
            "LANG": "C.UTF-8", "TERM": "xterm", "SHELL": "/bin/bash",
            "XDG_CONFIG_HOME": str(root / "config"), TAG_VARIABLE: tag,
        }
        read_fd, write_fd = os.pipe()
        deadline = time.monotonic() + spec.start_timeout
        try:
            with open(root / "xvfb.log", "wb") as log:
                process = subprocess.Popen(
                    ["Xvfb", "-displayfd", str(write_fd), "-screen", "0",
                     f"{spec.width}x{spec.height}x{spec.depth}", "-nolisten", "tcp", "-noreset"],
                    pass_fds=(write_fd,), env=env, cwd=root, stdin=subprocess.DEVNULL,
                    stdout=log, stderr=log, process_group=0,
                )
            os.close(write_fd)
            write_fd = -1
            try:
                number = _read_display_number(read_fd, process, deadline)
            except BaseException:
                _kill_group(process.pid)
                process.wait()
                raise
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        env["DISPLAY"] = f":{number}"
        display = cls(spec, process, number, root, tag, env)
        try:
            display.sandboxed = _use_sandbox(spec.sandbox)
            if display.sandboxed:
                (root / "passwd").write_text("user:x:1000:1000::/home/user:/bin/bash\n")
                (root / "group").write_text("user:x:1000:\n")
            display._start_watchdog()
            if spec.window_manager:
                display._start_window_manager(deadline)
        except BaseException:
            display.close_now()
            raise
        return display

    def spawn(self, argv: Sequence[str], stdin: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
        """Start a background program in the display's process group."""
        try:
            with open(self.root / "apps.log", "ab") as log:  # outside home: for diagnosis only
                child = subprocess.Popen(list(argv), env=self.env, cwd=self.home, stdin=stdin,
                                         stdout=log, stderr=log, process_group=self.pgid)
        except (PermissionError, ProcessLookupError) as exc:  # the group is gone with the server
            raise DisplayError(f"display {self.name} is gone: {exc}") from exc
        self.children.append(child)
        return child

    def diagnosis(self) -> str:
        try:
            with open(self.root / "apps.log", "rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - 600))
                tail = log.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return f"; the apps said: {tail}" if tail else ""

    def _start_watchdog(self) -> None:
        """Reap the display if this Python process dies without closing it (killed, crashed).

        The watchdog blocks reading a pipe whose only writer is this process; the kernel closes
        it on any death, and the watchdog then kills the display's process group.
        """
        read_fd, self._lifeline = os.pipe()
        try:
            self.children.append(subprocess.Popen(
                ["sh", "-c", f"read _; kill -TERM {self.process.pid}; sleep 1; "
                 f"rm -rf {shlex.quote(str(self.root))}; kill -KILL 0"],
                stdin=read_fd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=self.env, process_group=self.pgid,
            ))
        finally:
            os.close(read_fd)

    def _start_window_manager(self, deadline: float) -> None:
        """Start the window manager and return once it manages windows.

        A window mapped while openbox is still starting can stay unmanaged for seconds, and
        openbox announces itself (``_NET_SUPPORTING_WM_CHECK``) before it is done; its
        ``--startup`` command runs only once it is, so that command is the readiness signal.
        """
        manager = self.spec.window_manager or ""
        marker = self.root / "wm-ready"
        openbox = Path(manager).name == "openbox"
        if openbox:
            self.spawn([manager, "--startup", f"touch {shlex.quote(str(marker))}"])
        else:
            self.spawn([manager])
        while time.monotonic() < deadline:
            if marker.exists() if openbox else self._wm_announced():
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.005)
        raise DisplayError(f"window manager {manager!r} did not start on {self.name}")

    def _wm_announced(self) -> bool:
        return subprocess.run(["wmctrl", "-m"], env=self.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False).returncode == 0

    def alive(self) -> bool:
        return not self._closed and self.process.poll() is None

    def close_now(self) -> None:
        """Reap every process of the display and delete its files; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        with self._grab_lock:
            if self._grabber is not None:
                with contextlib.suppress(Exception):
                    self._grabber.close()
                self._grabber = None
        server = self.process
        for pid in tagged_pids(self.tag):
            if pid != server.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            server.terminate()  # SIGTERM lets Xvfb remove its lock file and socket
        try:
            server.wait(timeout=2)
        except subprocess.TimeoutExpired:
            _kill_group(server.pid)
            server.wait()
        _kill_group(server.pid)
        for pid in tagged_pids(self.tag):  # anything forked during the first sweep
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for child in self.children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=2)
            if child.stdin is not None:
                with contextlib.suppress(OSError):
                    child.stdin.close()
        self._remove_stale_files()
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1
        shutil.rmtree(self.root, ignore_errors=True)

    def _remove_stale_files(self) -> None:
        """Delete the lock and socket a killed server left, if they are still ours.

        A server that exits on SIGTERM removes them itself, and by then another display may have
        taken the number: the lock file names its owner's pid, so only our own is touched.
        """
        lock = Path(f"/tmp/.X{self.number}-lock")
        if self.process.returncode == 0 or _lock_owner(lock) != self.process.pid:
            return
        for stale in (Path(f"/tmp/.X11-unix/X{self.number}"), lock):
            with contextlib.suppress(OSError):
                stale.unlink()

    async def close(self) -> None:
        await asyncio.to_thread(self.close_now)

    # -- actions -------------------------------------------------------------------------------

    async def exec(self, argv: Sequence[str], timeout: float = 10.0) -> CommandResult:
        self.require_alive()
        process = await asyncio.create_subprocess_exec(
            *argv, env=self.env, cwd=self.home, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # short-lived and tagged; no process_group= here: uvloop (uvicorn's loop) refuses it
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            process.kill()
            stdout, stderr = await process.communicate()
            return CommandResult(-9, _text(stdout), _text(stderr), timed_out=True)
        finally:
            if process.returncode is None:  # cancelled: never leave the child behind
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
        return CommandResult(process.returncode or 0, _text(stdout), _text(stderr))

    async def shell(self, command: str, timeout: float = 60.0) -> CommandResult:
        """Run ``command`` with bash in the home directory, as a terminal on this desktop would.

        Output goes to files, not pipes, so that ``xcalc &`` returns at once (a background job
        would hold a pipe open until the timeout) and the job lives on, tagged, until the display
        is reaped. A command that times out is killed with its process group.
        """
        self.require_alive()
        if self.sandboxed:
            return await self._sandboxed_shell(command, timeout)
        with tempfile.TemporaryFile(dir=self.root) as out, tempfile.TemporaryFile(dir=self.root) as err:
            process = await asyncio.create_subprocess_exec(
                "bash", "-c", command, env=self.env, cwd=self.home,
                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
            )
            timed_out = False
            try:
                await asyncio.wait_for(process.wait(), timeout)
            except TimeoutError:
                timed_out = True
                _kill_group(process.pid)
                await process.wait()
            finally:
                if process.returncode is None:  # cancelled
                    _kill_group(process.pid)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(OUTPUT_LIMIT * 4), err.read(OUTPUT_LIMIT * 4)
        code = -9 if timed_out else (process.returncode or 0)
        return CommandResult(code, _text(stdout), _text(stderr), timed_out)

    def _shell_session(self) -> subprocess.Popen[bytes]:
        """One sandboxed bash per display that runs every command, started on first use.

        A sandbox per command would end each command's background jobs with it (its PID
        namespace dies with its first process); this shell keeps the namespace alive.
        """
        session = self._session
        if session is None or session.poll() is not None:
            self._runs.mkdir(exist_ok=True)
            session = self._session = self.spawn(
                self.wrap(["bash", "--noprofile", "--norc", "-s"], shared=[str(self._runs)]),
                stdin=subprocess.PIPE,
            )
        return session

    async def _sandboxed_shell(self, command: str, timeout: float) -> CommandResult:
        session = self._shell_session()
        self._run_count += 1
        base = str(self._runs / str(self._run_count))
        Path(f"{base}.sh").write_text(command)
        q = shlex.quote
        line = (f"(cd ~ && exec timeout -k 1 {timeout:g} bash {q(base + '.sh')}) </dev/null "
                f">{q(base + '.out')} 2>{q(base + '.err')}; echo $? >{q(base + '.tmp')}; "
                f"mv {q(base + '.tmp')} {q(base + '.rc')}\n")
        try:
            assert session.stdin is not None
            session.stdin.write(line.encode())
            session.stdin.flush()
        except OSError as exc:
            self.require_alive()
            raise ToolError(f"the shell is gone ({exc}); run the command again") from exc
        done = Path(f"{base}.rc")
        deadline = time.monotonic() + timeout + 10
        while not done.exists():
            if session.poll() is not None or time.monotonic() > deadline:
                self.require_alive()  # the agent killed its own shell: the next call starts another
                return CommandResult(-9, "", "the shell was killed before the command finished", True)
            await asyncio.sleep(0.005)
        code = int(done.read_text().strip() or -1)
        outputs = []
        for suffix in (".out", ".err"):
            with open(base + suffix, "rb") as handle:
                outputs.append(handle.read(OUTPUT_LIMIT * 4))
        for suffix in (".sh", ".out", ".err", ".rc"):
            with contextlib.suppress(OSError):
                os.unlink(base + suffix)
        timed_out = code in (124, 137)
        return CommandResult(-9 if timed_out else code, _text(outputs[0]), _text(outputs[1]), timed_out)

    async def launch(self, command: str) -> None:
        self.require_alive()
        self.spawn(self.wrap(shlex.split(command)))

    def wrap(self, argv: list[str], shared: Sequence[str] = ()) -> list[str]:
        """``argv`` as it runs for the agent: in bubblewrap when the display is sandboxed.

        The sandbox sees a read-only system, the session's home at ``/home/user`` (writable), a
        private ``/tmp`` holding only this display's X socket, no network and no host environment,
        so an agent's command cannot touch the host, another session or its display.
        """
        if not self.sandboxed:
            return argv
        from omnienv.sandboxes.bubblewrap import HOME, bwrap_command

        env = {
            "DISPLAY": self.name, "HOME": HOME, "USER": "user", "LANG": "C.UTF-8", "TERM": "xterm",
            "SHELL": "/bin/bash", "PATH": "/usr/local/bin:/usr/bin:/bin", TAG_VARIABLE: self.tag,
        }
        return bwrap_command(
            argv, work_dir=str(self.home), shared_dirs=[f"/tmp/.X11-unix/X{self.number}", *shared],
            read_only=[path for path in ("/etc/X11",) if os.path.isdir(path)],
            files=[(str(self.root / "passwd"), "/etc/passwd"), (str(self.root / "group"), "/etc/group")],
            env=env, hostname=socket.gethostname(),
        )

    def screenshot_png(self, level: int = 1) -> bytes:
        """Capture over MIT-SHM and encode at a fast zlib level (blocking, a few milliseconds)."""
        import mss
        import mss.tools

        with self._grab_lock:
            self.require_alive()
            if self._grabber is None:
                self._grabber = mss.MSS(display=self.name, with_cursor=True)
            shot = self._grabber.grab(self._grabber.monitors[0])
        return mss.tools.to_png(shot.rgb, shot.size, level=level)  # type: ignore[return-value]

    async def screenshot(self) -> bytes:
        try:
            return await asyncio.to_thread(self.screenshot_png)
        except DisplayError:
            raise
        except Exception as exc:
            self.require_alive()
            raise DisplayError(f"screen capture failed on {self.name}: {exc}") from exc

    def _path(self, path: str) -> Path:
        target = (self.home / path).resolve()
        if not target.is_relative_to(self.home.resolve()):
            raise ValueError(f"{path!r} is outside the home directory")
        return target

    async def read_file(self, path: str) -> bytes | None:
        try:
            return self._path(path).read_bytes()
        except (OSError, ValueError):
            return None

    async def is_dir(self, path: str) -> bool:
        try:
            return self._path(path).is_dir()
        except ValueError:
            return False

    async def write_file(self, path: str, data: bytes) -> None:
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


_sandbox_works: bool | None = None


def _use_sandbox(wanted: bool | None) -> bool:
    """Whether to run apps in bubblewrap; probed once (containers may forbid user namespaces)."""
    global _sandbox_works
    if wanted is False:
        return False
    if _sandbox_works is None:
        try:
            from omnienv.sandboxes.bubblewrap import bwrap_command

            probe = bwrap_command(["true"], work_dir=tempfile.gettempdir())
            _sandbox_works = subprocess.run(probe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            timeout=30, check=False).returncode == 0
        except Exception:
            _sandbox_works = False
        if not _sandbox_works and wanted is None:
            logger.warning("bubblewrap cannot run here: desktop apps and commands run unsandboxed, "
                           "as this process's user; install bubblewrap ('make system-deps') to isolate them")
    if wanted and not _sandbox_works:
        raise DisplayError("bubblewrap cannot run here: install it ('make system-deps') or allow user "
                           "namespaces, or use DisplaySpec(sandbox=False)")
    return _sandbox_works


def _text(data: bytes | None) -> str:
    text = (data or b"").decode("utf-8", "replace")
    return text if len(text) <= OUTPUT_LIMIT else text[:OUTPUT_LIMIT] + "\n... (output truncated)"


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _lock_owner(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


# -- the warm pool ------------------------------------------------------------------------------


class DisplayPool:
    """Displays started ahead of time, so a reset takes one from the shelf instead of booting X.

    A taken display is never returned: ``release`` reaps it in the background and the pool
    starts a fresh one, so no episode ever sees another's windows or files.
    """

    def __init__(self, spec: DisplaySpec = DisplaySpec(), size: int = 2,
                 start: Callable[[DisplaySpec], XvfbDisplay] = XvfbDisplay.start) -> None:
        self.spec = spec
        self.size = max(0, size)
        self.start = start
        self._ready: list[XvfbDisplay] = []
        self._starting = 0
        self._lock = threading.Lock()
        self._workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="omnienv-xvfb")
        self._closed = False
        self.last_error: BaseException | None = None

    def __repr__(self) -> str:
        return f"DisplayPool({self.spec.width}x{self.spec.height}, ready={len(self._ready)}/{self.size})"

    def fill(self) -> None:
        """Top the pool up in the background."""
        with self._lock:
            wanted = self.size - len(self._ready) - self._starting
            if self._closed or wanted <= 0:
                return
            self._starting += wanted
        for _ in range(wanted):
            if not self._submit(self._start_one):
                with self._lock:
                    self._starting -= 1

    def _start_one(self) -> None:
        display: XvfbDisplay | None = None
        try:
            display = self.start(self.spec)
        except Exception as exc:
            self.last_error = exc
        with self._lock:
            self._starting -= 1
            if display is not None and not self._closed:
                self._ready.append(display)
                display = None
        if display is not None:
            display.close_now()

    def acquire(self) -> XvfbDisplay:
        """A warm display if one is ready (discarding any that died on the shelf), else a new one."""
        while True:
            with self._lock:
                if self._closed:
                    raise DisplayError("the display pool is closed")
                display = self._ready.pop(0) if self._ready else None
            if display is None:
                break
            if display.alive():
                self.fill()
                return display
            self.release(display)
        self.fill()
        return self.start(self.spec)

    async def take(self) -> XvfbDisplay:
        """``acquire`` off the event loop; a display given to a cancelled caller is reaped, not lost."""
        lock, claim = threading.Lock(), {"abandoned": False, "display": None}

        def acquire() -> XvfbDisplay:
            display = self.acquire()
            with lock:
                if claim["abandoned"]:
                    self.release(display)
                else:
                    claim["display"] = display
            return display

        try:
            return await asyncio.to_thread(acquire)
        except asyncio.CancelledError:
            with lock:
                claim["abandoned"] = True
                taken = claim["display"]
            if isinstance(taken, XvfbDisplay):
                self.release(taken)
            raise

    def wait_ready(self, count: int | None = None, timeout: float = 30.0) -> bool:
        """Block until ``count`` displays are warm (benchmarks and tests use it to start level)."""
        count = self.size if count is None else count
        self.fill()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self._ready) >= count:
                    return True
                idle = self._starting == 0
            if idle:
                self.fill()
            time.sleep(0.01)
        return False

    def release(self, display: XvfbDisplay) -> None:
        """Reap ``display`` in the background."""
        if not self._submit(display.close_now):
            display.close_now()

    def _submit(self, work: Any) -> bool:
        try:
            self._workers.submit(work)
        except RuntimeError:  # interpreter shutting down or pool closed: do it inline
            return False
        return True

    def close(self) -> None:
        """Reap every display the pool holds and wait for background reaping to finish."""
        with self._lock:
            self._closed = True
            ready, self._ready = self._ready, []
        for display in ready:
            display.close_now()
        self._workers.shutdown(wait=True)
        with self._lock:
            late, self._ready = self._ready, []
        for display in late:
            display.close_now()


_pools: dict[tuple[DisplaySpec, int], DisplayPool] = {}
_pools_lock = threading.Lock()


def shared_pool(spec: DisplaySpec = DisplaySpec(), size: int | None = None) -> DisplayPool:
    """The process-wide pool for ``spec`` (size from ``OMNIENV_DESKTOP_POOL``, default 2)."""
    if size is None:
        size = int(os.environ.get("OMNIENV_DESKTOP_POOL", "2"))
    with _pools_lock:
        pool = _pools.get((spec, size))
        if pool is None or pool._closed:
            pool = _pools[(spec, size)] = DisplayPool(spec, size)
        return pool


@atexit.register
def _close_pools() -> None:
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()
