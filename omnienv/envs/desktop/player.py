"""A scripted desktop player: a fixed list of tool calls per task, in pixels or a normalised space.

It clicks where the task's apps open (they open at fixed places, see
:mod:`omnienv.envs.desktop.apps`) and types what a person would, so every call goes through the
same tools a model uses and every task is checked on the real desktop. Tests and the demo use it
to prove the tasks can be solved; it is no model of skill. Before it types into a dialog it
waits for the dialog to show, as a model looks at the screen first (a dialog that has not opened
yet takes no keys); its other waits give an app a moment to take what it was sent.
"""

from __future__ import annotations

from omnienv.core import ToolCall
from omnienv.envs.desktop.tasks import DESKTOP_TASKS
from omnienv.envs.desktop.workbook import cell_position
from omnienv.rollout.trajectory import Episode

__all__ = ["SCRIPTS", "DesktopScripted", "cell_centre", "in_cell"]

# the terminal: xterm at +10+10 (6x13 cells from (13, 32))
TERMINAL = (250, 180)
TERMINAL_TITLE = (250, 19)
TERMINAL_FIRST_WORD = (43, 38)
# the editor: xedit at +520+10, lines 22 px apart from y=166
EDITOR_TEXT = (760, 250)
EDITOR_FIRST_LINE = (600, 165)
EDITOR_SECOND_LINE = (600, 188)
EDITOR_BELOW_TEXT = (760, 330)
EDITOR_SAVE = (588, 43)
# the clock: xclock at +600+450 (it takes no keyboard focus)
CLOCK_CLOSE = (740, 459)
CLOCK_TITLE = (650, 459)
# the calculator: xcalc at +40+400; a click on its display selects the number shown
CALCULATOR_DISPLAY = (160, 450)
# the spreadsheet: Gnumeric at +50+40, scrolled to A1, its cells 81 x 18 px from (107, 251)
FIRST_CELL = (107, 251)
CELL_SIZE = (81, 18)
SHEET_TAB = (97, 654)
SHEET_MENU_RENAME = (158, 563)
SPREADSHEET_MENU = "Gnumeric Spreadsheet"
"""The title of Gnumeric's popup menus (its program name; its tooltips over the toolbar carry it too)."""
# the file manager: PCManFM placed at (200, 100), a list sorted by name, folders first
FILE_NAMES_X = 420
FIRST_ROW_Y = 225
ROW_HEIGHT = 28
EMPTY_LIST = (600, 480)


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(name, dict(arguments))


def _wait(seconds: float) -> ToolCall:
    return _call("wait", duration=seconds)


def _in_terminal(command: str) -> list[ToolCall]:
    return [_call("left_click", coordinate=TERMINAL), _call("type", text=command + "\n")]


def _editor_save() -> list[ToolCall]:
    return [_call("left_click", coordinate=EDITOR_SAVE), _wait(0.2)]


def _on_calculator(keys: str) -> list[ToolCall]:
    """Clear the calculator (its space key), type on its keyboard, then click its display (which selects the result)."""
    return [
        _call("left_click", coordinate=CALCULATOR_DISPLAY),
        _call("key", keys="space"),
        _call("type", text=keys),
        _call("left_click", coordinate=CALCULATOR_DISPLAY),
    ]


def cell_centre(ref: str) -> tuple[int, int]:
    """Where cell ``ref`` (say "B3") shows on the screen, in pixels."""
    row, column = cell_position(ref)
    width, height = CELL_SIZE
    return FIRST_CELL[0] + column * width + width // 2, FIRST_CELL[1] + row * height + height // 2


def in_cell(ref: str, text: str) -> list[ToolCall]:
    """Click cell ``ref``, then type ``text`` there (Tab moves one cell right).

    A click, not the name box: Gnumeric sometimes leaves the keyboard in the name box after it
    jumps, and then the text typed next reads as a name it refuses, in a dialog that takes every
    later key. Escape after the click: a click that lands soon after another on the same cell is a
    double click, which would edit the cell's text instead of replacing it.
    """
    return [
        _call("left_click", coordinate=cell_centre(ref)),
        _call("key", keys="Escape"),
        _call("type", text=f"{text}\n"),
    ]


def _save() -> list[ToolCall]:
    return [_call("key", keys="ctrl+s"), _wait(0.5)]


def _until_shown(title: str) -> list[ToolCall]:
    """Wait until a window titled ``title`` shows (at most 20 s), then a moment for it to take the keyboard.

    It asks the X server through the session's shell, where a model would look at a screenshot: a
    fixed wait long enough for a loaded machine would be slow everywhere else.
    """
    search = f"timeout 20 xdotool search --sync --onlyvisible --name '^{title}$' > /dev/null"
    return [_call("run_command", command=search), _wait(0.2)]


def _save_as(name: str) -> list[ToolCall]:
    return [
        _call("key", keys="ctrl+s"),
        *_until_shown("Save the current workbook as"),
        _call("key", keys="ctrl+a"),
        _call("type", text=f"{name}\n"),
        _wait(0.5),
    ]


def _row(index: int) -> tuple[int, int]:
    """The file manager's entry ``index`` (Archive, Backup, invoice.pdf, notes.txt, old.txt, report-draft.txt)."""
    return FILE_NAMES_X, FIRST_ROW_Y + index * ROW_HEIGHT


def _name_in_dialog(title: str, name: str) -> list[ToolCall]:
    return [*_until_shown(title), _call("key", keys="ctrl+a"), _call("type", text=f"{name}\n"), _wait(0.3)]


_LOOK = _call("screenshot")
SCRIPTS: dict[str, list[ToolCall]] = {
    # the terminal
    "train/terminal-echo": [_LOOK, *_in_terminal("echo hello-rl > ~/hello.txt")],
    "train/make-directory": [_LOOK, *_in_terminal("mkdir -p ~/projects/alpha")],
    "train/rename-file": [_LOOK, *_in_terminal("mv ~/draft.txt ~/final.txt")],
    "train/terminal-select": [
        _LOOK,
        *_in_terminal("clear; echo selectme42"),
        _wait(0.3),
        _call("double_click", coordinate=TERMINAL_FIRST_WORD),
    ],
    "train/count-lines": [_LOOK, *_in_terminal("wc -l < ~/words.txt > ~/count.txt")],
    "train/delete-logs": [_LOOK, *_in_terminal("rm -f ~/logs/*.log")],
    "train/backup-file": [_LOOK, *_in_terminal("cp ~/config.ini ~/config.ini.bak")],
    "test/second-line": [_LOOK, *_in_terminal("sed -n 2p ~/source.txt > ~/line.txt")],
    "test/sort-names": [_LOOK, *_in_terminal("sort ~/names.txt > ~/sorted.txt")],
    "test/find-word": [_LOOK, *_in_terminal("cd ~/notes && grep -l pineapple * > ~/found.txt; cd")],
    # windows
    "train/close-clock": [_LOOK, _call("left_click", coordinate=CLOCK_CLOSE)],
    "train/open-calculator": [_LOOK, *_in_terminal("xcalc &"), _wait(0.5)],
    "train/move-terminal-down": [
        _LOOK,
        _call("left_click_drag", start_coordinate=TERMINAL_TITLE, coordinate=(250, 420)),
    ],
    "test/maximize-terminal": [_LOOK, _call("double_click", coordinate=TERMINAL_TITLE)],
    "test/move-clock": [_LOOK, _call("left_click_drag", start_coordinate=CLOCK_TITLE, coordinate=(200, 470))],
    "test/close-terminal": [_LOOK, *_in_terminal("exit"), _wait(0.3)],
    # the calculator
    "train/calculator-answer": [_LOOK, *_on_calculator("37*43=")],
    "train/calculator-sqrt": [_LOOK, *_on_calculator("1764r")],
    "test/calculator-divide": [_LOOK, *_on_calculator("1000/8=")],
    # the editor
    "train/editor-type": [
        _LOOK,
        _call("left_click", coordinate=EDITOR_TEXT),
        _call("type", text="meeting at 10"),
        *_editor_save(),
    ],
    "train/editor-append": [
        _LOOK,
        _call("left_click", coordinate=EDITOR_BELOW_TEXT),  # below the text: the cursor goes to its end
        _call("type", text="eggs"),
        *_editor_save(),
    ],
    "test/editor-replace": [
        _LOOK,
        _call("left_click", coordinate=EDITOR_FIRST_LINE),
        _call("key", keys="ctrl+e"),
        _call("key", keys="BackSpace BackSpace BackSpace BackSpace BackSpace"),
        _call("type", text="milk"),
        *_editor_save(),
    ],
    "test/editor-delete-line": [
        _LOOK,
        _call("left_click", coordinate=EDITOR_SECOND_LINE),
        _call("key", keys="ctrl+a ctrl+k ctrl+k"),  # to the line's start, kill the line, then its newline
        *_editor_save(),
    ],
    # the spreadsheet
    "train/spreadsheet-number": [_LOOK, *in_cell("A1", "42"), *_save_as("answer.gnumeric")],
    "train/spreadsheet-headers": [_LOOK, *in_cell("A1", "Name\tScore"), *_save_as("scores.gnumeric")],
    "train/spreadsheet-sum": [_LOOK, *in_cell("B7", "=sum(B2:B6)"), *_save()],
    "train/spreadsheet-fix-value": [_LOOK, *in_cell("B3", "17"), *_save()],
    "test/spreadsheet-max": [_LOOK, *in_cell("D1", "=max(B2:B6)"), *_save()],
    "test/spreadsheet-rename-sheet": [
        _LOOK,
        _call("right_click", coordinate=SHEET_TAB),
        *_until_shown(SPREADSHEET_MENU),
        _call("left_click", coordinate=SHEET_MENU_RENAME),
        *_name_in_dialog("Rename Sheet", "Summary"),
        _wait(0.3),
        *_save(),
    ],
    "test/spreadsheet-product": [_LOOK, *in_cell("C2", "=A2*B2"), *_save()],
    # the file manager
    "train/files-new-folder": [
        _LOOK,
        _call("left_click", coordinate=EMPTY_LIST),
        _call("key", keys="ctrl+shift+n"),
        *_name_in_dialog("Creating New Folder", "Photos"),
    ],
    "train/files-rename": [
        _LOOK,
        _call("left_click", coordinate=_row(5)),
        _call("key", keys="F2"),
        *_name_in_dialog("Rename File", "report-final.txt"),
    ],
    "train/files-trash": [
        _LOOK,
        _call("left_click", coordinate=_row(4)),
        _call("key", keys="Delete"),
        *_until_shown("Confirm"),
        _call("key", keys="Return"),  # "move to the trash?": yes
        _wait(0.3),
    ],
    "test/files-move": [_LOOK, _call("left_click_drag", start_coordinate=_row(2), coordinate=_row(0)), _wait(0.5)],
    "test/files-copy": [
        _LOOK,
        _call("left_click", coordinate=_row(3)),
        _call("key", keys="ctrl+c"),
        _wait(0.5),
        _call("double_click", coordinate=_row(1)),  # into Backup
        _wait(0.5),
        _call("key", keys="ctrl+v"),
        _wait(0.5),
    ],
}


class DesktopScripted:
    """Plays :data:`SCRIPTS` then terminates with "success"; unknown tasks terminate with "failure".

    ``coordinate_space`` makes it speak a normalised space (e.g. (1000, 1000)) to exercise an
    environment that rescales coordinates.
    """

    name = "scripted"

    def __init__(self, coordinate_space: tuple[int, int] | None = None, screen: tuple[int, int] = (1024, 768)) -> None:
        self.coordinate_space = coordinate_space
        self.screen = screen

    async def act(self, episode: Episode) -> ToolCall:
        script = SCRIPTS.get(episode.task_id or self._task_from_prompt(episode))
        if script is None:
            return _call("terminate", status="failure")
        index = len(episode.steps)
        if index >= len(script):
            return _call("terminate", status="success")
        return self.scaled(script[index])

    @staticmethod
    def _task_from_prompt(episode: Episode) -> str:
        """Which task this is, read from the prompt when the infrastructure did not say."""
        text = episode.prompt.text if episode.prompt is not None else ""
        return next((task_id for task_id, task in DESKTOP_TASKS.items() if task.instruction in text), "")

    def scaled(self, call: ToolCall) -> ToolCall:
        """``call`` with its points in this player's coordinate space."""
        arguments = {}
        for name, value in call.arguments.items():
            if name in ("coordinate", "start_coordinate"):
                value = list(self._point(value))
            arguments[name] = value
        return ToolCall(call.name, arguments)

    def _point(self, point: tuple[int, int]) -> tuple[int, int]:
        if self.coordinate_space is None:
            return point
        (x, y), (width, height) = point, self.screen
        return (
            round((x + 0.5) * self.coordinate_space[0] / width),
            round((y + 0.5) * self.coordinate_space[1] / height),
        )
