"""Xvfb displays: real X servers on free display numbers, everything else in one sandbox, all reaped."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import random
import resource
import signal
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest
from PIL import Image

from omnienv.core import EnvironmentFailure, ToolError
from omnienv.sandboxes.desktop import DisplayError, key_combo, modifiers, parse_keys
from omnienv.sandboxes.xvfb import DisplayPool, DisplaySpec, XvfbDisplay, missing_programs
from omnienv.sandboxes.xvfb.capture import encode_png
from omnienv.sandboxes.xvfb.server import XVFB_OPEN_FILES
from tests.polling import eventually

pytestmark = pytest.mark.skipif(
    bool(missing_programs(("Xvfb", "bwrap", "openbox", "xterm", "xlogo"))),
    reason="X programs or bubblewrap missing: run 'make system-deps'",
)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def open_file_limit(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as handle:
        line = next(line for line in handle if line.startswith("Max open files"))
    return int(line.split()[3])


def live(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except OSError:
        return False


def test_displays_get_free_numbers_and_are_reaped_with_everything() -> None:
    first, second = XvfbDisplay.start(), XvfbDisplay.start()
    try:
        assert first.number != second.number
        assert first.alive() and second.alive()

        async def populate() -> None:
            await first.launch("xterm", "terminal")
            await first.wait_for_app("terminal")
            result = await first.shell("sleep 300 & echo started")
            assert result.stdout.strip() == "started"

        asyncio.run(populate())
        pids = first.pids()
        assert len(pids) >= 8  # bwrap pairs of the window manager, xterm and the shell, their programs, sleep
        assert first.apps["terminal"].pid in pids
        servers = [first.process.pid, first.server.pid]
    finally:
        first.close_now()
    try:
        assert not first.alive()
        assert not [pid for pid in [*pids, *servers] if live(pid)], "processes of a closed display are still running"
        assert not first.root.exists()
        assert second.alive(), "closing one display must not touch another"
    finally:
        second.close_now()
    assert not live(second.process.pid) and not live(second.server.pid)


def test_screenshot_is_a_png_of_the_screen() -> None:
    import mss

    async def shot(display: XvfbDisplay) -> bytes:
        await display.launch("xlogo -geometry 300x200+100+100 -fg red -bg yellow", "logo")
        await display.wait_for_app("logo")
        await display.wait_settled("logo")
        return await display.screenshot()

    display = XvfbDisplay.start(DisplaySpec())
    try:
        png = asyncio.run(shot(display))
        with mss.MSS(display=display.name, with_cursor=True) as screen:  # mss's own conversion, for reference
            expected = screen.grab(screen.monitors[0]).rgb
    finally:
        display.close_now()
    assert png_size(png) == (1024, 768)
    pixels = Image.open(io.BytesIO(png))
    assert pixels.mode == "RGB" and pixels.tobytes() == expected
    colours = {colour for _, colour in pixels.getcolors(1024 * 768) or []}
    assert {(255, 0, 0), (255, 255, 0)} <= colours  # the logo's red and yellow: the channels in RGB order


def test_encode_png_is_lossless_and_swaps_x_pixels_to_rgb() -> None:
    width, height = 37, 11
    bgrx = bytes(random.Random(7).randrange(256) for _ in range(width * height * 4))
    decoded = Image.open(io.BytesIO(encode_png(bgrx, (width, height))))
    rgb = b"".join(bytes((bgrx[i + 2], bgrx[i + 1], bgrx[i])) for i in range(0, len(bgrx), 4))
    assert decoded.size == (width, height) and decoded.mode == "RGB" and decoded.tobytes() == rgb


def test_screenshot_of_other_size() -> None:
    small = XvfbDisplay.start(DisplaySpec(640, 480, window_manager=None))
    try:
        assert png_size(asyncio.run(small.screenshot())) == (640, 480)
    finally:
        small.close_now()


def test_shell_reports_output_errors_and_timeouts(display: XvfbDisplay) -> None:
    async def run() -> None:
        ok = await display.shell("echo out; echo err >&2; exit 3")
        assert (ok.returncode, ok.stdout, ok.stderr, ok.timed_out) == (3, "out\n", "err\n", False)
        home = await display.shell("pwd; echo $DISPLAY")
        assert home.stdout.split() == ["/home/user", display.name]
        started = time.monotonic()
        slow = await display.shell("sleep 30 & sleep 30", timeout=0.3)
        assert slow.timed_out and time.monotonic() - started < 5
        background = await display.shell("xlogo >/dev/null 2>&1 &", timeout=10)
        assert background.returncode == 0 and not background.timed_out
        deadline = time.monotonic() + 10
        while not [w for w in await display.windows() if w.exe == "/usr/bin/xlogo" and w.viewable]:
            assert time.monotonic() < deadline, "xlogo started by a command never showed a window"
            await asyncio.sleep(0.02)
        big = await display.shell("head -c 100000 /dev/zero | tr '\\0' x; echo; seq 1 3 >&2")
        assert big.stdout.endswith("(output truncated)") and big.stderr == "1\n2\n3\n"

    asyncio.run(run())


def test_sandboxed_commands_cannot_reach_the_host(display: XvfbDisplay) -> None:
    async def run() -> None:
        wrote = await display.shell("echo mine > note.txt && touch /usr/evil; echo $?")
        assert (display.home / "note.txt").read_text() == "mine\n"
        assert "Read-only file system" in wrote.stderr or "Permission denied" in wrote.stderr
        assert not os.path.exists("/usr/evil")
        others = await display.shell("ls /tmp/.X11-unix; ps -e --no-headers | wc -l; touch /tmp/.X11-unix/new")
        assert others.stdout.split()[0] == f"X{display.number}", "other displays must stay hidden"
        assert int(others.stdout.split()[1]) < 20, "host processes must stay hidden"
        assert not os.path.exists("/tmp/.X11-unix/new")
        net = await display.shell("exec 3<>/dev/tcp/127.0.0.1/22 && echo connected || echo refused")
        assert "connected" not in net.stdout
        gone = await display.shell("kill -9 -1")  # the agent kills its own shell...
        assert gone.returncode != 0
        again = await display.shell("echo back")  # ...and the next command gets a new one
        assert again.stdout == "back\n"

    asyncio.run(run())


TYPED = "echo 'Typed: A-z 0_9 ~!@#$%^&*()[]{}<>?|\\;:,. é€ü' > out.txt\n"


def test_input_reaches_apps(display: XvfbDisplay) -> None:
    async def run() -> None:
        app = await display.launch("xterm -geometry 80x24+10+10", "terminal")
        await display.wait_for_app("terminal")
        await display.click(250, 180)
        await display.type_text(TYPED)  # shifted, unshifted and characters missing from the keymap
        deadline = time.monotonic() + 5
        while await display.read_file("out.txt") is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert (await display.read_file("out.txt") or b"").decode() == "Typed: A-z 0_9 ~!@#$%^&*()[]{}<>?|\\;:,. é€ü\n"
        await display.key("ctrl+u")
        await display.type_text("echo keyed > keyed.txt")
        await display.key("Return")
        while await display.read_file("keyed.txt") is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert await display.read_file("keyed.txt") == b"keyed\n"
        await display.move(321, 123)
        assert await display.cursor() == (321, 123)
        (window,) = await display.app_windows("terminal")
        assert window.pid == app.pid and window.exe == "/usr/bin/xterm" and window.width > 300
        assert "xterm" in await display.window_titles()

    asyncio.run(run())


def test_bad_keys_are_the_agents_error_not_a_failure(display: XvfbDisplay) -> None:
    for keys in ("NoSuchKeyAnywhere+", "a exec touch /tmp/x", "ctrl+"):
        with pytest.raises(ToolError):
            asyncio.run(display.key(keys))
    with pytest.raises(ToolError):
        asyncio.run(display.click(10, 10, held="shift+exec"))
    assert display.alive()


def test_key_names_and_modifiers_are_normalised() -> None:
    assert key_combo("ctrl+s") == ["ctrl+s"]
    assert key_combo("Enter esc cmd+Tab") == ["Return", "Escape", "super+Tab"]
    assert key_combo("f5 page_down @ + shift") == ["F5", "Next", "at", "plus", "Shift_L"]
    assert key_combo("XF86AudioPlay U20AC") == ["XF86AudioPlay", "U20AC"]
    assert modifiers("Control+Shift") == ["ctrl", "shift"]
    assert modifiers("ctrl shift") == ["ctrl", "shift"]
    assert modifiers(None) == []
    (combo,) = parse_keys("ctrl+shift+T")
    assert combo.modifiers == ("Control_L", "Shift_L") and combo.key == "T"
    for bad in ("   ", "exec", "ctrl+", "hyper+a", "a " * 40, "x" * 300):
        with pytest.raises(ToolError):
            key_combo(bad)


def test_a_dead_display_is_an_infrastructure_failure(display: XvfbDisplay) -> None:
    os.kill(display.server.pid, signal.SIGKILL)  # Xvfb crashes: its sandbox ends with it
    display.process.wait()
    with pytest.raises(DisplayError) as caught:
        asyncio.run(display.screenshot())
    assert isinstance(caught.value, EnvironmentFailure)
    with pytest.raises(DisplayError):
        asyncio.run(display.cursor())


def test_files_stay_inside_home(display: XvfbDisplay) -> None:
    asyncio.run(display.write_file("a/b.txt", b"x"))
    assert (display.home / "a" / "b.txt").read_bytes() == b"x"
    assert asyncio.run(display.read_file("../run/xvfb.log")) is None
    with pytest.raises(ValueError):
        asyncio.run(display.write_file("../escape.txt", b"x"))
    os.symlink("/etc/hostname", display.home / "link")
    os.symlink("/etc", display.home / "dir-link")
    assert asyncio.run(display.read_file("link")) is None
    assert asyncio.run(display.read_file("dir-link/hostname")) is None
    assert asyncio.run(display.path_kind("link")) == "symlink"
    assert asyncio.run(display.path_kind("dir-link/hostname")) is None
    assert asyncio.run(display.path_kind("a")) == "dir" and asyncio.run(display.path_kind("a/b.txt")) == "file"
    assert not asyncio.run(display.is_dir("dir-link"))


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
        eventually(lambda: not live(warm.server.pid), what="the warm display's Xvfb gone")
        assert pool.wait_ready(timeout=30), "the pool refills after handing displays out"
    finally:
        pool.close()
        for display in taken:
            display.close_now()
    assert not pool.live() and pool.ready == 0
    for display in taken:
        assert not display.pids() and not display.root.exists()


def test_displays_die_with_a_killed_owner() -> None:
    script = textwrap.dedent(
        """
        import os
        from omnienv.sandboxes.xvfb import XvfbDisplay
        display = XvfbDisplay.start()
        xterm = display.spawn(["xterm"])
        print(display.server.pid, display.root, xterm.pid, flush=True)
        os.kill(os.getpid(), 9)
        """
    )
    owner = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=dict(os.environ)
    )
    server, root, xterm = owner.stdout.split()
    eventually(lambda: not live(int(server)), what="Xvfb gone with the process that owned it")
    eventually(lambda: not live(int(xterm)), what="its apps gone with it")
    eventually(lambda: not os.path.exists(root), what="its files gone too")


def test_a_killed_x_connection_is_remade(display: XvfbDisplay) -> None:
    """A client on the display may XKillClient the host's own connection: the next action reconnects."""
    from Xlib import display as xdisplay
    from Xlib import error
    from Xlib.protocol import request

    # synced: a KillClient that reached the server before the window did would name no client
    window = display.x.call(lambda d: (d.screen().root.create_window(0, 0, 1, 1, 0, 0), d.sync())[0])
    killer = xdisplay.Display(display.name)
    killer.display.error_classes.update(error.xerror_class)  # as xclient does: RANDR's codes hide BadValue
    try:
        request.KillClient(display=killer.display, resource=window.id)
        killer.sync()
    finally:
        killer.close()
    asyncio.run(display.move(12, 34))
    assert asyncio.run(display.cursor()) == (12, 34)


def test_events_a_client_sends_to_the_hosts_windows_are_read_like_any_other(display: XvfbDisplay) -> None:
    """A client may SendEvent any event to any window, reaching the client that made it: an extension's
    event with an unknown sub-code made the host's next call raise KeyError (an episode voided)."""
    from Xlib import display as xdisplay
    from Xlib.protocol import event

    assert asyncio.run(display.selection()) is None  # the host now has a window of its own (its selection helper)
    sender = xdisplay.Display(display.name)
    try:
        notify = sender.query_extension("RANDR").first_event + 1  # RRNotify, whose sub-codes are 0 to 2
        for window in sender.screen().root.query_tree().children:
            forged = event.AnyEvent(type=notify, detail=200, sequence_number=0, data=bytes(28))
            window.send_event(forged, event_mask=0, propagate=False)  # to the client that made it
        sender.sync()
    finally:
        sender.close()
    asyncio.run(display.move(12, 34))
    assert asyncio.run(display.cursor()) == (12, 34)


def test_a_display_held_by_a_client_ends_the_episode_as_the_agents(
    display: XvfbDisplay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """XGrabServer from a client freezes every other connection: that is the agent's doing, not a failure."""
    from Xlib import display as xdisplay

    from omnienv.core import AgentCausedEnd
    from omnienv.sandboxes.xvfb import display as module

    monkeypatch.setattr(module, "X_TIMEOUT", 0.5)
    asyncio.run(display.cursor())  # connected before the grab
    holder = xdisplay.Display(display.name)
    try:
        holder.grab_server()
        holder.sync()
        started = time.monotonic()
        with pytest.raises(AgentCausedEnd) as caught:
            asyncio.run(display.move(1, 1))
        assert caught.value.reason == "display_unresponsive" and time.monotonic() - started < 5
        with pytest.raises(AgentCausedEnd):  # and at once from then on
            asyncio.run(display.screenshot())
    finally:
        holder.ungrab_server()
        holder.close()


def test_a_display_held_again_and_again_ends_the_episode_within_the_deadline(
    display: XvfbDisplay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that grabs the server for a little less than the deadline, again and again, made each
    X call of a step wait nearly all of it: a drag (a dozen calls) outlasted the server's deadline on a
    step, which voids the episode. The waits count together, and end it as the agent's doing."""
    import threading

    from Xlib import display as xdisplay

    from omnienv.core import AgentCausedEnd
    from omnienv.sandboxes.xvfb import display as module

    monkeypatch.setattr(module, "X_TIMEOUT", 1.0)
    monkeypatch.setattr(module, "SLOW_CALL", 0.2, raising=False)
    asyncio.run(display.cursor())  # connected before the grabs
    holder = xdisplay.Display(display.name)
    done = threading.Event()

    def hold_again_and_again() -> None:
        while not done.is_set():
            holder.grab_server()
            holder.sync()
            done.wait(0.6)  # under the deadline
            holder.ungrab_server()
            holder.sync()
            done.wait(0.05)  # the host's call waiting meanwhile gets through

    grabbing = threading.Thread(target=hold_again_and_again)
    grabbing.start()
    try:
        display.begin_step()
        with pytest.raises(AgentCausedEnd) as caught:
            asyncio.run(display.drag((100, 100), (300, 300)))
        assert caught.value.reason == "display_unresponsive"
    finally:
        done.set()
        grabbing.join()
        holder.close()


@pytest.fixture
def low_descriptors_taken() -> Iterator[None]:
    """Every descriptor below select's limit (1024) open, as in a process holding about 170 desktops."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 1400  # the fillers, then the display's own files past them
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"the open-file limit ({hard}) is too low to hold {need} descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    fillers = [os.open(os.devnull, os.O_RDONLY)]
    while fillers[-1] < 1024:
        fillers.append(os.open(os.devnull, os.O_RDONLY))
    try:
        yield
    finally:
        for fd in fillers:
            with contextlib.suppress(OSError):
                os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_displays_start_and_act_past_selects_descriptor_limit(low_descriptors_taken: None) -> None:
    """python-xlib waits with select(), which refuses descriptors >= 1024: no display could start here."""
    display = XvfbDisplay.start()
    try:
        assert display.x.call(lambda d: d.fileno()) >= 1024  # the connection this test is about
        # the X server does not inherit the limit raised here for the sessions' files
        assert open_file_limit(display.server.pid) == XVFB_OPEN_FILES < resource.getrlimit(resource.RLIMIT_NOFILE)[0]

        async def act() -> None:
            await display.launch("xterm -geometry 80x24+10+10", "terminal")
            await display.wait_for_app("terminal")
            await display.move(12, 34)
            assert await display.cursor() == (12, 34)
            assert png_size(await display.screenshot()) == (1024, 768)
            assert "xterm" in await display.window_titles()

        asyncio.run(act())
    finally:
        display.close_now()
