"""The X server as a hostile client would find it.

Every program on a desktop (the agent's own, through its shell) talks to the X server, a large C
program. These tests hold what a client that steers it (its font path) or takes it over gets: a
server that sees the host's system and nothing else, runs as a user no other process shares, and
holds no capability. Read from the host: ``/proc/<pid>/status`` and ``/proc/<pid>/root`` of the real
Xvfb.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnienv.sandboxes.xvfb import DisplaySpec, XvfbDisplay, missing_programs
from tests.polling import eventually

pytestmark = pytest.mark.skipif(
    bool(missing_programs(("Xvfb", "bwrap"))), reason="X programs or bubblewrap missing: run 'make system-deps'"
)

SYSTEM_FONTS = Path("/usr/share/fonts/X11/Type1")
SECRET_FONT = "-omnienv-secret-medium-r-normal--0-0-0-0-m-0-iso8859-1"


@pytest.fixture
def displays() -> Iterator[list[XvfbDisplay]]:
    started = [XvfbDisplay.start(DisplaySpec(window_manager=None)) for _ in range(2)]
    try:
        yield started
    finally:
        for display in started:
            display.close_now()


def status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as handle:
        return {key: value.strip() for key, _, value in (line.partition(":") for line in handle)}


def processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root server hands its X servers users of their own")
def test_each_x_server_runs_as_a_user_of_its_own_without_privileges(displays: list[XvfbDisplay]) -> None:
    uids = []
    for display in displays:
        found = status(display.server.pid)
        assert found["Name"] == "Xvfb"
        assert len(set(found["Uid"].split())) == 1 and len(set(found["Gid"].split())) == 1, "real, saved and fs ids too"
        uid = int(found["Uid"].split()[0])
        assert uid not in (0, os.getuid()), "the X server must not share a user with the server, or be root"
        assert found["Groups"] == ""
        for capabilities in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(found[capabilities], 16) == 0, capabilities
        assert found["NoNewPrivs"] == "1"
        uids.append(uid)
    assert uids[0] != uids[1], "two X servers with one user could trace each other"
    first = displays[0]
    first.close_now()
    eventually(lambda: not processes_of(uids[0]), what="no process left with the closed server's user")


def test_the_x_server_sees_the_system_and_nothing_else(displays: list[XvfbDisplay]) -> None:
    display = displays[0]
    view = Path(f"/proc/{display.server.pid}/root")
    assert set(os.listdir(view)) <= {"usr", "bin", "lib", "lib32", "lib64", "libx32", "sbin", "etc", "dev", "tmp"}
    assert not {"passwd", "shadow", "hostname"} & set(os.listdir(view / "etc"))
    assert os.listdir(view / "tmp" / ".X11-unix") == [f"X{display.number}"], "no other display's socket"
    assert os.readlink(f"/proc/{display.server.pid}/cwd") == "/"


def test_a_client_cannot_make_the_x_server_read_host_files(displays: list[XvfbDisplay], tmp_path: Path) -> None:
    """SetFontPath names directories the server reads fonts from: a host directory must not exist for it."""
    from Xlib import error

    if not SYSTEM_FONTS.is_dir() or not any(SYSTEM_FONTS.glob("*.pfb")):
        pytest.fail(f"{SYSTEM_FONTS} holds no Type1 font: run 'make system-deps'")
    font = next(SYSTEM_FONTS.glob("*.pfb"))
    secret = tmp_path / "fonts"
    secret.mkdir()
    shutil.copy(font, secret / font.name)
    (secret / "fonts.dir").write_text(f"1\n{font.name} {SECRET_FONT}\n")

    display = displays[0]

    def point_at(directory: Path) -> bool:
        def call(d: object) -> bool:
            caught = error.CatchError(error.BadValue)
            d.set_font_path([str(directory)], onerror=caught)  # type: ignore[attr-defined]
            d.sync()  # type: ignore[attr-defined]
            return caught.get_error() is None

        return display.x.call(call)

    assert point_at(SYSTEM_FONTS), "a system font directory is the server's to read"
    assert not point_at(secret), "the X server read a directory of the host's"
    assert not display.x.call(lambda d: d.list_fonts("-omnienv-secret-*", 10))


def test_without_a_user_to_lease_the_x_server_still_runs_in_its_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that is not root (or in a rootless container) runs its X servers as its own user,
    in a user namespace of their own: the same view of the system, and the desktop works."""
    import asyncio

    from omnienv.sandboxes.xvfb import server

    monkeypatch.setattr(server, "lease_user", lambda: None)
    display = XvfbDisplay.start()
    try:
        assert display.server.user is None
        found = status(display.server.pid)
        assert int(found["Uid"].split()[0]) == os.getuid() and int(found["CapEff"], 16) == 0
        assert "tmp" in os.listdir(f"/proc/{display.server.pid}/root")
        assert not {"root", "home", "proc"} & set(os.listdir(f"/proc/{display.server.pid}/root"))

        async def act() -> None:
            await display.launch("xterm -geometry 80x24+10+10", "terminal")
            await display.wait_for_app("terminal")
            await display.move(12, 34)
            assert await display.cursor() == (12, 34)
            assert (await display.shell("echo ok")).stdout == "ok\n"

        asyncio.run(act())
    finally:
        display.close_now()
    eventually(lambda: display.process.poll() is not None, what="its sandbox gone")


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping a capability from the bounding set takes root")
def test_where_root_cannot_make_namespaces_the_x_server_falls_back_and_says_so() -> None:
    """A container that allows user namespaces only (no CAP_SYS_ADMIN): the sessions' sandboxes
    still run, so the X server must too, in a user namespace of its own, with a warning."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import asyncio
        from omnienv.sandboxes.xvfb import XvfbDisplay
        display = XvfbDisplay.start()
        try:
            print("user", display.server.user)
            print(asyncio.run(display.shell("echo ok")).stdout.strip())
        finally:
            display.close_now()
        """
    )
    without = ["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--"]
    ran = subprocess.run([*without, sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split("\n")[:2] == ["user None", "ok"], ran.stdout
    assert "run as this process's own user" in ran.stderr and "CAP_SYS_ADMIN" in ran.stderr
