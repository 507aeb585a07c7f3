"""Xvfb displays: real X servers on free display numbers, reaped with everything they started."""

from __future__ import annotations

import asyncio
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest

from omnienv.core import EnvironmentFailure, ToolError
from omnienv.sandboxes.desktop import DisplayError, key_combo, modifiers
from omnienv.sandboxes.xvfb import DisplayPool, DisplaySpec, XvfbDisplay, missing_programs, tagged_pids

pytestmark = pytest.mark.skipif(
    bool(missing_programs(("Xvfb", "xdotool", "wmctrl", "openbox", "xterm", "xlogo"))),
    reason="X programs missing: run 'make system-deps'",
)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def wait_until(predicate, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def live(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except OSError:
        return False


@pytest.fixture
def display() -> Iterator[XvfbDisplay]:
    started = XvfbDisplay.start()
    try:
        yield started
    finally:
        started.close_now()


def test_displays_get_free_numbers_and_are_reaped_with_everything() -> None:
    first, second = XvfbDisplay.start(), XvfbDisplay.start()
    try:
        assert first.number != second.number
        assert first.alive() and second.alive()

        async def populate() -> None:
            await first.launch("xterm")
            await first.wait_for_window("^xterm$")
            result = await first.shell("sleep 300 & echo started")
            assert result.stdout.strip() == "started"

        asyncio.run(populate())
        pids = tagged_pids(first.tag)
        assert len(pids) >= 5  # server, watchdog, window manager, xterm (+ its shell), sleep
    finally:
        first.close_now()
    try:
        assert not first.alive()
        assert not [pid for pid in pids if live(pid)], "processes of a closed display are still running"
        assert not first.root.exists()
        assert second.alive(), "closing one display must not touch another"
    finally:
        second.close_now()
    assert not live(second.process.pid)


def test_screenshot_is_a_png_of_the_screen(display: XvfbDisplay) -> None:
    png = asyncio.run(display.screenshot())
    assert png_size(png) == (1024, 768)


def test_screenshot_of_other_size() -> None:
    small = XvfbDisplay.start(DisplaySpec(640, 480, window_manager=None))
    try:
        assert png_size(asyncio.run(small.screenshot())) == (640, 480)
    finally:
        small.close_now()


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandboxed", "host"])
def test_shell_reports_output_errors_and_timeouts(sandbox: bool) -> None:
    try:
        display = XvfbDisplay.start(DisplaySpec(sandbox=sandbox))
    except DisplayError as exc:
        pytest.skip(str(exc))

    async def run() -> None:
        ok = await display.shell("echo out; echo err >&2; exit 3")
        assert (ok.returncode, ok.stdout, ok.stderr, ok.timed_out) == (3, "out\n", "err\n", False)
        home = await display.shell("pwd; echo $DISPLAY")
        inside = "/home/user" if display.sandboxed else str(display.home)
        assert home.stdout.split() == [inside, display.name]
        started = time.monotonic()
        slow = await display.shell("sleep 30 & sleep 30", timeout=0.3)
        assert slow.timed_out and time.monotonic() - started < 5
        background = await display.shell("xlogo >/dev/null 2>&1 &", timeout=10)
        assert background.returncode == 0 and not background.timed_out
        await display.wait_for_window("xlogo")

    try:
        asyncio.run(run())
        leftover = subprocess.run(["pgrep", "-f", "^sleep 30$"], capture_output=True, text=True).stdout.split()
        assert not [pid for pid in leftover if int(pid) in tagged_pids(display.tag)]
    finally:
        display.close_now()


def test_sandboxed_commands_cannot_reach_the_host(display: XvfbDisplay) -> None:
    if not display.sandboxed:
        pytest.skip("bubblewrap cannot run on this machine")

    async def run() -> None:
        wrote = await display.shell("echo mine > note.txt && touch /usr/evil; echo $?")
        assert (display.home / "note.txt").read_text() == "mine\n"
        assert "Read-only file system" in wrote.stderr or "Permission denied" in wrote.stderr
        assert not os.path.exists("/usr/evil")
        others = await display.shell("ls /tmp/.X11-unix; ps -e --no-headers | wc -l")
        assert others.stdout.split()[0] == f"X{display.number}", "other displays must stay hidden"
        assert int(others.stdout.split()[1]) < 20, "host processes must stay hidden"
        net = await display.shell("exec 3<>/dev/tcp/127.0.0.1/22 && echo connected || echo refused")
        assert "connected" not in net.stdout
        gone = await display.shell("kill -9 -1")  # the agent kills its own shell...
        assert gone.returncode != 0
        again = await display.shell("echo back")  # ...and the next command gets a new one
        assert again.stdout == "back\n"

    asyncio.run(run())


def test_input_reaches_apps(display: XvfbDisplay) -> None:
    async def run() -> None:
        await display.launch("xterm -geometry 80x24+10+10")
        await display.wait_for_window("^xterm$")
        await display.click(250, 180)
        await display.type_text("echo typed-here > out.txt\n")
        deadline = time.monotonic() + 5
        while await display.read_file("out.txt") is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert await display.read_file("out.txt") == b"typed-here\n"
        await display.move(321, 123)
        assert await display.cursor() == (321, 123)
        assert "xterm" in await display.window_titles()
        geometry = await display.window_geometry("^xterm$")
        assert geometry is not None and geometry[2] > 300

    asyncio.run(run())


def test_bad_keys_are_the_agents_error_not_a_failure(display: XvfbDisplay) -> None:
    with pytest.raises(ToolError):
        asyncio.run(display.xdotool("key", "--", "NoSuchKeyAnywhere+"))


def test_key_names_and_modifiers_are_normalised() -> None:
    assert key_combo("ctrl+s") == ["ctrl+s"]
    assert key_combo("Enter esc cmd+Tab") == ["Return", "Escape", "super+Tab"]
    assert modifiers("Control+Shift") == ["ctrl", "shift"]
    assert modifiers(None) == []
    with pytest.raises(ToolError):
        key_combo("   ")


def test_a_dead_display_is_an_infrastructure_failure(display: XvfbDisplay) -> None:
    display.process.send_signal(signal.SIGKILL)
    display.process.wait()
    with pytest.raises(DisplayError) as caught:
        asyncio.run(display.screenshot())
    assert isinstance(caught.value, EnvironmentFailure)
    with pytest.raises(DisplayError):
        asyncio.run(display.cursor())


def test_files_stay_inside_home(display: XvfbDisplay) -> None:
    asyncio.run(display.write_file("a/b.txt", b"x"))
    assert (display.home / "a" / "b.txt").read_bytes() == b"x"
    assert asyncio.run(display.read_file("../xvfb.log")) is None
    with pytest.raises(ValueError):
        asyncio.run(display.write_file("../escape.txt", b"x"))


def test_pool_hands_out_warm_displays_and_reaps_them() -> None:
    pool = DisplayPool(DisplaySpec(), size=2)
    taken: list[XvfbDisplay] = []
    try:
        assert pool.wait_ready(timeout=30)
        started = time.monotonic()
        warm = pool.acquire()
        assert time.monotonic() - started < 0.2, "a warm display must not boot X"
        taken.append(warm)
        assert warm.alive()
        second = pool.acquire()
        taken.append(second)
        assert second.number != warm.number
        pool.release(warm)
        assert wait_until(lambda: not live(warm.process.pid))
        assert pool.wait_ready(timeout=30), "the pool refills after handing displays out"
    finally:
        pool.close()
        for display in taken:
            display.close_now()
    shelf = [display for display in pool._ready]
    assert not shelf
    for display in taken:
        assert not tagged_pids(display.tag)


def test_displays_die_with_a_killed_owner() -> None:
    script = textwrap.dedent(
        """
        import os
        from omnienv.sandboxes.xvfb import XvfbDisplay
        display = XvfbDisplay.start()
        display.spawn(["xterm"])
        print(display.process.pid, display.root, flush=True)
        os.kill(os.getpid(), 9)
        """
    )
    owner = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ))
    server, root = owner.stdout.split()
    assert wait_until(lambda: not live(int(server)), timeout=10), "Xvfb outlived the process that owned it"
    assert wait_until(lambda: not os.path.exists(root), timeout=10), "its files outlived it too"
