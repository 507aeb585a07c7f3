"""Every desktop task on a real display: not passed at the start, not passed by a plausible wrong or
shortcut attempt (each shown to have really happened), passed by its scripted solution, and every
process of the episode reaped afterwards.

One environment plays all the tasks, one episode each, through the same tools a model uses.
"""

from __future__ import annotations

import asyncio
import gzip
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from omnienv.core import ToolCall
from omnienv.envs.desktop import DESKTOP_TASKS, Desktop
from omnienv.envs.desktop.checks import (
    Check,
    app_window_where,
    file_contains,
    file_is,
    in_left_half,
    in_lower_half,
    is_directory,
    selected_in,
)
from omnienv.envs.desktop.player import SCRIPTS, DesktopScripted, in_cell
from omnienv.envs.desktop.tasks import find_task
from omnienv.envs.desktop.workbook import XML_LIMIT, cell_is, cell_position, parse_workbook, workbook_xml
from omnienv.sandboxes.desktop import DesktopSession, Window
from omnienv.sandboxes.xvfb import DisplayPool, DisplaySpec, XvfbDisplay, missing_programs
from omnienv.sandboxes.xvfb.homes import Homes
from tests.envs.test_desktop import DESKTOP_PROGRAMS

pytestmark = pytest.mark.skipif(
    bool(missing_programs((*DESKTOP_PROGRAMS, "ssconvert", "xdotool"))),
    reason="X programs or bubblewrap missing: run 'make system-deps'",
)


def run(command: str) -> ToolCall:
    return ToolCall("run_command", {"command": command})


SAVE = [ToolCall("key", {"keys": "ctrl+s"}), ToolCall("wait", {"duration": 0.5})]


def forged_workbook(path: str, ref: str, value: float) -> Check:
    """The shell's forgery landed: a real workbook in the session's home, holding ``value``."""

    async def check(desktop: DesktopSession) -> bool:
        data = await desktop.read_file(path)
        sheets = parse_workbook(data) if data else None
        found = next(iter(sheets.values()), {}).get((0, 0)) if sheets else None
        return found is not None and found.number() == value

    return check


def impostor(program: str, where: Callable[[DesktopSession, Window], bool]) -> Check:
    """A window of another ``program`` process (one the agent started, not the task's) passes ``where``."""

    async def check(desktop: DesktopSession) -> bool:
        launched = {app.pid for app in desktop.apps.values()}
        return any(
            window.viewable
            and window.pid not in launched
            and (window.exe or "").endswith(f"/{program}")
            and where(desktop, window)
            for window in await desktop.windows()
        )

    return check


def titled(text: str) -> Check:
    async def check(desktop: DesktopSession) -> bool:
        return text in await desktop.window_titles()

    return check


@dataclass(frozen=True)
class Attempt:
    """A wrong or shortcut attempt, and what proves it happened (so that its failing means something)."""

    calls: list[ToolCall]
    landed: Check | None = None


RENAME_XTERM = "xdotool search --onlyvisible --class xterm set_window --name {0} %@"
ATTEMPTS: dict[str, Attempt] = {
    # the terminal: wrong content, a copy instead of a move, half the work
    "train/terminal-echo": Attempt([run("echo hello > ~/hello.txt")], file_is("hello.txt", "hello")),
    "train/make-directory": Attempt([run("mkdir -p ~/projects/alph")], is_directory("projects/alph")),
    "train/rename-file": Attempt([run("cp ~/draft.txt ~/final.txt")], file_is("final.txt", "first draft")),
    "train/terminal-select": Attempt([run("echo selectme42")]),
    "train/count-lines": Attempt([run("wc -l ~/words.txt > ~/count.txt")], file_contains("count.txt", "words.txt")),
    "train/delete-logs": Attempt([run("rm ~/logs/app.log")]),
    "train/backup-file": Attempt([run("touch ~/config.ini.bak")], file_is("config.ini.bak", "")),
    "test/second-line": Attempt([run("head -1 ~/source.txt > ~/line.txt")], file_is("line.txt", "alpha")),
    "test/sort-names": Attempt([run("cp ~/names.txt ~/sorted.txt")], file_contains("sorted.txt", "mallory")),
    "test/find-word": Attempt([run("echo notes/tuesday.txt > ~/found.txt")], file_contains("found.txt", "tuesday")),
    # windows: a renamed window, an impostor started for the purpose, the wrong size
    "train/close-clock": Attempt([run("xdotool search --class xclock set_window --name closed %@")], titled("closed")),
    "train/open-calculator": Attempt([run(RENAME_XTERM.format("xcalc"))], titled("xcalc")),
    "train/move-terminal-down": Attempt([run("xterm -geometry 40x4+10+620 &")], impostor("xterm", in_lower_half)),
    "test/maximize-terminal": Attempt(
        [run("xdotool search --onlyvisible --class xterm windowsize %@ 700 500")],
        app_window_where("terminal", lambda desktop, window: window.width == 700),
    ),
    "test/move-clock": Attempt([run("xclock -geometry 100x100+10+560 &")], impostor("xclock", in_left_half)),
    "test/close-terminal": Attempt([run(RENAME_XTERM.format("closed"))], titled("closed")),
    # the calculator: the wrong operation, a step left out
    "train/calculator-answer": Attempt(
        [ToolCall("left_click", {"coordinate": [160, 450]}), ToolCall("type", {"text": "37*42="})],
        selected_in("calculator", "1554"),
    ),
    "train/calculator-sqrt": Attempt(
        [ToolCall("left_click", {"coordinate": [160, 450]}), ToolCall("type", {"text": "1764"})],
        selected_in("calculator", "1764"),
    ),
    "test/calculator-divide": Attempt(
        [ToolCall("left_click", {"coordinate": [160, 450]}), ToolCall("type", {"text": "1000*8="})],
        selected_in("calculator", "8000"),
    ),
    # the editor: the shell writing the file (in the session's home: not the editor's)
    "train/editor-type": Attempt([run("echo 'meeting at 10' > ~/notes.txt")], file_is("notes.txt", "meeting at 10")),
    "train/editor-append": Attempt(
        [run("printf 'milk\\nbread\\neggs\\n' > ~/shopping.txt")], file_contains("shopping.txt", "eggs")
    ),
    "test/editor-replace": Attempt([run("echo 'buy milk' > ~/todo.txt")], file_is("todo.txt", "buy milk")),
    "test/editor-delete-line": Attempt(
        [run("printf 'color=blue\\nsize=12\\n' > ~/settings.conf")], file_contains("settings.conf", "size")
    ),
    # the spreadsheet: a real workbook forged by ssconvert, a typed-in result, a save forgotten
    "train/spreadsheet-number": Attempt(
        [run("echo 42 > /tmp/a.csv && ssconvert /tmp/a.csv ~/answer.gnumeric 2>/dev/null")],
        forged_workbook("answer.gnumeric", "A1", 42),
    ),
    "train/spreadsheet-headers": Attempt(
        [run("echo 7 > /tmp/s.csv && ssconvert /tmp/s.csv ~/scores.gnumeric 2>/dev/null")],
        forged_workbook("scores.gnumeric", "A1", 7),
    ),
    "train/spreadsheet-sum": Attempt([*in_cell("B7", "1380"), *SAVE], cell_is("budget.gnumeric", "B7", 1380)),
    "train/spreadsheet-fix-value": Attempt(in_cell("B3", "17"), titled("*inventory.gnumeric - Gnumeric")),
    "test/spreadsheet-max": Attempt([*in_cell("D1", "77"), *SAVE], cell_is("scores.gnumeric", "D1", 77)),
    "test/spreadsheet-rename-sheet": Attempt(in_cell("A1", "Summary"), titled("*report.gnumeric - Gnumeric")),
    "test/spreadsheet-product": Attempt([*in_cell("C2", "10"), *SAVE], cell_is("prices.gnumeric", "C2", 10)),
    # the file manager: the shell doing it (in the session's home: not the file manager's)
    "train/files-new-folder": Attempt([run("mkdir ~/Photos")], is_directory("Photos")),
    "train/files-rename": Attempt(
        [run("echo 'quarterly numbers' > ~/report-final.txt")], file_is("report-final.txt", "quarterly numbers")
    ),
    "train/files-trash": Attempt(
        [run("mkdir -p ~/.local/share/Trash/files && echo 'old notes' > ~/.local/share/Trash/files/old.txt")],
        file_is(".local/share/Trash/files/old.txt", "old notes"),
    ),
    "test/files-move": Attempt(
        [run("mkdir -p ~/Archive && echo '%PDF-1.4 invoice 118' > ~/Archive/invoice.pdf")],
        file_is("Archive/invoice.pdf", "%PDF-1.4 invoice 118"),
    ),
    "test/files-copy": Attempt(
        [run("mkdir -p ~/Backup && echo 'water the plants' > ~/Backup/notes.txt")],
        file_is("Backup/notes.txt", "water the plants"),
    ),
}


def processes_in(cgroups: set[str]) -> list[tuple[int, str]]:
    """(pid, name) of every live process in one of the named sandbox cgroups."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cgroup") as handle:
                lines = handle.read()
            with open(f"/proc/{entry.name}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rsplit(")", 1)[1].split()[0]
        if state != "Z" and any(f"/{group}\n" in lines or lines.endswith(f"/{group}") for group in cgroups):
            found.append((int(entry.name), name))
    return found


def leftovers(display: XvfbDisplay) -> list[str]:
    """What of a released display still exists: its X server, its processes, its files, its cgroup."""
    left = [f"process {pid} {name}" for pid, name in processes_in({display.sandbox.cgroup.name})]
    if display.process.poll() is None or os.path.exists(f"/proc/{display.server.pid}"):
        left.append("the X server")
    if display.root.exists():
        left.append(f"the files {display.root}")
    left += [f"the cgroup {path}" for path in display.sandbox.cgroup.dirs if path.exists()]
    return left


@pytest.fixture(scope="module")
def env() -> Iterator[Desktop]:
    pool = DisplayPool(DisplaySpec(), size=2)
    desktop = Desktop(pool=pool)
    try:
        yield desktop
    finally:
        asyncio.run(desktop.close())
        pool.close()


async def describe(desktop: DesktopSession) -> str:
    """What the desktop shows, for a failure's message: windows, the selection, the homes' files."""
    assert isinstance(desktop, XvfbDisplay)
    windows = [(w.app_class, w.title, w.x, w.y, w.width, w.height) for w in await desktop.windows() if w.viewable]
    homes = {}
    for app in [None, *(name for name, app in desktop.apps.items() if app.own_home)]:
        root = desktop.homes.of(app)
        found = (str(path.relative_to(root)) for path in root.rglob("*"))
        homes[app] = sorted(path for path in found if not path.startswith((".cache", ".config")))
    return f"windows {windows}; selection {await desktop.selection()}; files {homes}"


async def until(check: Check, desktop: DesktopSession, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check(desktop):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g} s: {await describe(desktop)}")
        await asyncio.sleep(0.05)


def test_every_task_has_a_script_and_an_attempt_that_must_fail() -> None:
    assert set(SCRIPTS) == set(DESKTOP_TASKS) == set(ATTEMPTS)
    assert len({task.id for task in DESKTOP_TASKS.values()}) == len(DESKTOP_TASKS)
    apps = {app.partition(":")[0] for task in DESKTOP_TASKS.values() for app in task.apps}
    assert apps >= {"terminal", "editor", "spreadsheet", "files", "calculator"}
    for task_id, task in DESKTOP_TASKS.items():
        if task.answer is not None:
            assert task.answer not in task.instruction, task_id


@pytest.mark.parametrize("task_id", sorted(DESKTOP_TASKS))
def test_the_script_solves_it_and_a_wrong_attempt_does_not(env: Desktop, task_id: str) -> None:
    check = find_task(task_id).check
    player = DesktopScripted()

    async def episode() -> None:
        await env.reset(task=task_id)
        desktop = env.desktop
        assert isinstance(desktop, XvfbDisplay)
        assert not await check(desktop), "the task passes before anything was done"
        attempt = ATTEMPTS[task_id]
        for call in attempt.calls:
            result = await env.step(call)
            assert result.failure is None and not result.over, result
        if attempt.landed is not None:
            await until(attempt.landed, desktop, "the wrong attempt")
        assert not await check(desktop), f"the wrong attempt passes: {await describe(desktop)}"
        for call in SCRIPTS[task_id]:
            result = await env.step(player.scaled(call))
            assert not result.observation.is_error, (call, result.observation.text)
        await until(check, desktop, "the script's solution")  # the apps may still be taking its last events
        end = await env.step(ToolCall("terminate", {"status": "success"}))
        assert end.done and end.info["success"] is True and end.reward == 1.0, await describe(desktop)
        await env.close()
        deadline = time.monotonic() + 15
        while leftovers(desktop) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not leftovers(desktop), leftovers(desktop)

    asyncio.run(episode())


def test_workbooks_are_read_defensively() -> None:
    """A saved workbook comes from a program the agent drives: bombs and entities read as no workbook."""
    sheets = parse_workbook(gzip.compress(workbook_xml("Budget", [["Item", "Cost"], ["rent", 900]]).encode()))
    assert sheets is not None and list(sheets) == ["Budget"]
    assert sheets["Budget"][cell_position("B2")].number() == 900 and sheets["Budget"][(1, 0)].text == "rent"
    assert cell_position("AA10") == (9, 26)
    assert parse_workbook(gzip.compress(b" " * (XML_LIMIT + 1))) is None
    entity = b'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>'
    assert parse_workbook(entity) is None
    assert parse_workbook(b"not xml") is None and parse_workbook(b"<other/>") is None
    # read as UTF-8 only, where the check for "<!ENTITY" holds (in UTF-16 its bytes differ); a declared
    # encoding Python lacks raised LookupError, a superscript digit ValueError: both voided the episode
    utf16 = workbook_xml("S", [["x"]]).replace('encoding="UTF-8"', 'encoding="UTF-16"').encode("utf-16")
    assert parse_workbook(utf16) is None
    assert parse_workbook(b'<?xml version="1.0" encoding="x-bogus"?><a/>') is None
    superscript = workbook_xml("S", [["x"]]).replace('ValueType="60"', 'ValueType="\u00b2"')
    assert superscript != workbook_xml("S", [["x"]]) and parse_workbook(superscript.encode()) is not None
    # Gnumeric saves a cell's text as the whole file ("Text (configurable)"): a type of 5,000 digits
    # raised ValueError (past Python's limit on digits), which voided the episode
    digits = workbook_xml("S", [[42]]).replace('ValueType="40"', f'ValueType="{"4" * 5000}"')
    sheets = parse_workbook(digits.encode())
    assert sheets is not None and sheets["S"][(0, 0)].value_type is None


GNUMERIC_SHARED = (  # what Gnumeric saves after "=A2*B2" in C1 is copied to C2: the copy names it by ExprID
    b'<?xml version="1.0" encoding="UTF-8"?><gnm:Workbook xmlns:gnm="http://www.gnumeric.org/v10.dtd">'
    b"<gnm:SheetNameIndex><gnm:SheetName>Sheet1</gnm:SheetName></gnm:SheetNameIndex>"
    b"<gnm:Sheets><gnm:Sheet><gnm:Name>Sheet1</gnm:Name><gnm:Cells>"
    b'<gnm:Cell Row="0" Col="2" ExprID="1">=A2*B2</gnm:Cell><gnm:Cell Row="1" Col="2" ExprID="1"/>'
    b'<gnm:Cell Row="0" Col="4" ExprID="2">=SUM($B$2:B6)+Sheet1!A1&amp;"B2"</gnm:Cell>'
    b'<gnm:Cell Row="2" Col="5" ExprID="2"/>'
    b"</gnm:Cells></gnm:Sheet></gnm:Sheets></gnm:Workbook>"
)


def test_a_copied_formula_reads_as_it_does_in_its_cell() -> None:
    """Its relative references move with the cell (C2 holds =A3*B3, which Gnumeric computes): read as
    the text of the cell it was copied from, it passed spreadsheet-product, whose C2 must be =A2*B2."""
    sheets = parse_workbook(GNUMERIC_SHARED)
    assert sheets is not None
    cells = sheets["Sheet1"]
    assert cells[(0, 2)].formula == "=A2*B2" and cells[(1, 2)].formula == "=A3*B3"
    assert cells[(2, 5)].formula == '=SUM($B$2:C8)+Sheet1!B3&"B2"'


def test_an_apps_home_is_named_by_a_plain_word() -> None:
    homes = Homes(Path("/nonexistent/work"), Path("/nonexistent/homes"))
    for name in ("../work", "a/b", "", "Spreadsheet"):
        with pytest.raises(ValueError):
            homes.of(name, make=False)
    assert homes.read("spreadsheet", "x.txt", 10) is None and homes.kind("spreadsheet", "../x") is None
