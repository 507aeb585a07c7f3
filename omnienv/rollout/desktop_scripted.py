"""A scripted desktop player: a fixed list of tool calls per task, in pixels or a normalised space.

It clicks where the task's apps open (they open at fixed places) and types what a person would,
so every call goes through the same tools a model uses and every task is checked on the real
desktop. Tests and the demo use it to prove the tasks can be solved; it is no model of skill.
"""

from __future__ import annotations

from omnienv.core import ToolCall
from omnienv.envs.desktop.tasks import DESKTOP_TASKS
from omnienv.rollout.trajectory import Episode

__all__ = ["SCRIPTS", "DesktopScripted"]

TERMINAL = (250, 180)  # inside the xterm at +10+10
TERMINAL_TITLE = (250, 19)
TERMINAL_FIRST_WORD = (43, 38)  # the first word of the terminal's top row (6x13 cells from (13, 32))
EDITOR_TEXT = (760, 250)  # inside xedit's text pane at +520+10
EDITOR_FIRST_LINE = (600, 165)
EDITOR_SAVE = (588, 43)
CLOCK_CLOSE = (740, 459)  # the close button of its title bar (xclock takes no keyboard focus)
CLOCK_TITLE = (650, 459)
CALCULATOR_DISPLAY = (160, 450)


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(name, dict(arguments))


def _in_terminal(command: str) -> list[ToolCall]:
    return [_call("left_click", coordinate=TERMINAL), _call("type", text=command + "\n")]


_LOOK = _call("screenshot")
SCRIPTS: dict[str, list[ToolCall]] = {
    "train/terminal-echo": [_LOOK, *_in_terminal("echo hello-rl > ~/hello.txt")],
    "train/make-directory": [_LOOK, *_in_terminal("mkdir -p ~/projects/alpha")],
    "train/rename-file": [_LOOK, *_in_terminal("mv ~/draft.txt ~/final.txt")],
    "train/editor-type": [
        _LOOK,
        _call("left_click", coordinate=EDITOR_TEXT),
        _call("type", text="meeting at 10"),
        _call("left_click", coordinate=EDITOR_SAVE),
    ],
    "train/terminal-select": [
        _LOOK,
        *_in_terminal("clear; echo selectme42"),
        _call("wait", duration=0.3),
        _call("double_click", coordinate=TERMINAL_FIRST_WORD),
    ],
    "train/close-clock": [
        _LOOK,
        _call("left_click", coordinate=CLOCK_CLOSE),
    ],
    "train/open-calculator": [_LOOK, *_in_terminal("xcalc &"), _call("wait", duration=0.5)],
    "train/calculator-answer": [
        _LOOK,
        _call("left_click", coordinate=CALCULATOR_DISPLAY),
        _call("type", text="37*43="),
        _call("screenshot"),  # a model reads 1591 off the display here
        *_in_terminal("echo 1591 > ~/answer.txt"),
    ],
    "test/second-line": [_LOOK, *_in_terminal("sed -n 2p ~/source.txt > ~/line.txt")],
    "test/maximize-terminal": [_LOOK, _call("double_click", coordinate=TERMINAL_TITLE)],
    "test/move-clock": [
        _LOOK,
        _call("left_click_drag", start_coordinate=CLOCK_TITLE, coordinate=(200, 470)),
    ],
    "test/editor-replace": [
        _LOOK,
        _call("left_click", coordinate=EDITOR_FIRST_LINE),
        _call("key", keys="ctrl+e"),
        _call("key", keys="BackSpace BackSpace BackSpace BackSpace BackSpace"),
        _call("type", text="milk"),
        _call("left_click", coordinate=EDITOR_SAVE),
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
        return self._scaled(script[index])

    @staticmethod
    def _task_from_prompt(episode: Episode) -> str:
        """Which task this is, read from the prompt when the infrastructure did not say."""
        text = episode.prompt.text if episode.prompt is not None else ""
        return next((task_id for task_id, task in DESKTOP_TASKS.items() if task.instruction in text), "")

    def _scaled(self, call: ToolCall) -> ToolCall:
        arguments = {}
        for name, value in call.arguments.items():
            if name in ("coordinate", "start_coordinate"):
                value = list(self._point(value))  # type: ignore[arg-type]
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
