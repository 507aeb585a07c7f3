"""The conformance matrix's shared parts, importable from every peer's virtualenv.

Each cell plays one reference environment through one framework's own package. What a cell
plays is fixed here, once: the task, a crash on demand, the secret no agent may be shown, the
environment's own scripted player fed only the text the framework shows the model, and the
shape of the report a framework's driver prints. ``tests/matrix/test_matrix.py`` compares every
report with the same episode played on the bare environment (:mod:`tests.matrix.reference`).
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import re
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, replace
from typing import Any

from omnienv.core import EnvironmentBase, Observation, StepResult, TextBlock, ToolCall
from omnienv.envs.desktop import Desktop
from omnienv.envs.jupyter import Jupyter
from omnienv.envs.terminal import HarborTask, Terminal
from omnienv.envs.wordle import Wordle
from omnienv.rollout.trajectory import Episode, Step

__all__ = [
    "CELLS",
    "CRASH",
    "ENVS",
    "Cell",
    "MatrixDesktop",
    "MatrixJupyter",
    "MatrixTerminal",
    "MatrixWordle",
    "Player",
    "cell_report",
    "crash_report",
    "image_report",
    "png_size",
    "print_report",
    "tool_call_text",
]

CRASH = "__crash__"
"""An argument value that makes the matrix's environments crash, as a dead sandbox would."""


class Crashes:
    """Raise (an infrastructure failure, not an agent's mistake) on a call carrying :data:`CRASH`:
    each tool of the class is wrapped, so the step runs up to the tool and crashes there."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tools = cls.tools  # type: ignore[attr-defined]  # set by EnvironmentBase, next in the MRO
        cls.tools = {name: replace(spec, function=_crashing(spec.function)) for name, spec in tools.items()}  # type: ignore[attr-defined]


def _crashing(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)  # the same signature: the tool is called as before
    def tool(self: Any, *args: Any, **kwargs: Any) -> Any:
        if CRASH in json.dumps([args, kwargs]):
            raise RuntimeError("the sandbox died")
        return function(self, *args, **kwargs)

    return tool


class MatrixWordle(Crashes, Wordle):
    name = "wordle"


class MatrixJupyter(Crashes, Jupyter):
    name = "jupyter"


class MatrixDesktop(Crashes, Desktop):
    name = "desktop"


class MatrixTerminal(Crashes, Terminal):
    name = "terminal"


@dataclass(frozen=True)
class Cell:
    """One reference environment as every framework plays it."""

    env: str
    spec: str
    """``module:Class``: what in-process frameworks load and served ones serve."""
    env_class: type[EnvironmentBase]
    task_id: str
    crash: ToolCall
    policy: str
    images: bool
    """Whether the environment shows the model images (the desktop's screenshots)."""
    secret_in: tuple[str, str] | None = None
    """The secret of a task with no ``Task.answer`` (a Harbor task's): ``(file, text)``, where ``file``
    is in the task's ``tests/`` or ``solution/``, which the agent is never shown, and ``text`` is in
    it but neither in the instruction nor in the starting workspace."""

    @property
    def harbor(self) -> HarborTask | None:
        """The cell's Harbor task directory, read, where the environment plays one."""
        if not issubclass(self.env_class, Terminal):
            return None
        return self.env_class.harbor_tasks()[self.task_id.partition("/")[2]]

    @property
    def secret(self) -> str:
        """The task's answer, which must reach the agent through no dialect."""
        if self.secret_in is None:
            return str(self.env_class.task_index().find(self.task_id).answer)
        harbor = self.harbor
        file, text = self.secret_in
        assert harbor is not None, f"{self.env}: a secret_in needs a Harbor task"
        assert text in (harbor.path / file).read_text(), f"{text!r} is not in {self.task_id}'s {file}"
        workspace = [f.read_text(errors="replace") for f in (harbor.path / "environment").rglob("*") if f.is_file()]
        shown = [harbor.instruction, *workspace]
        assert not any(text.lower() in part.lower() for part in shown), f"the agent may read {text!r}: no secret"
        return text

    @property
    def prompt_fragment(self) -> str:
        """A piece of the task's prompt: proof that a driver collected what the model was shown."""
        if self.harbor is not None:
            return self.harbor.instruction.strip()[:40]
        task = self.env_class.task_index().find(self.task_id)
        data = task.data
        return str(data.get("question") or data.get("instruction") or "Wordle")[:40]


CELLS: dict[str, Cell] = {
    "wordle": Cell(
        "wordle",
        "tests.matrix.cells:MatrixWordle",
        MatrixWordle,
        "test/0000",
        ToolCall("guess", {"word": CRASH}),
        "solver",
        False,
    ),
    "jupyter": Cell(
        "jupyter",
        "tests.matrix.cells:MatrixJupyter",
        MatrixJupyter,
        "test/sales_total-3",
        ToolCall("add_and_execute_code_cell", {"code": CRASH}),
        "oracle",
        False,
    ),
    "desktop": Cell(
        "desktop",
        "tests.matrix.cells:MatrixDesktop",
        MatrixDesktop,
        "test/find-word",
        ToolCall("type", {"text": CRASH}),
        "scripted",
        True,
    ),
    "terminal": Cell(
        "terminal",
        "tests.matrix.cells:MatrixTerminal",
        MatrixTerminal,
        "test/text-markdown-toc",
        ToolCall("run", {"command": CRASH}),
        "oracle",
        False,
        secret_in=("tests/expected.md", "configuration-file-skylinetoml"),  # an anchor only the verifier holds
    ),
}
ENVS = tuple(CELLS)
MAX_CALLS = 12


def tool_call_text(call: ToolCall) -> str:
    """``call`` as a text-only model writes it (the ``<tool_call>`` JSON every text dialect reads)."""
    return f"<tool_call>{json.dumps({'name': call.name, 'arguments': call.arguments})}</tool_call>"


def _now(coroutine: Coroutine[Any, Any, ToolCall]) -> ToolCall:
    """The value of a coroutine that never waits (the scripted players), even inside a running loop."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("a scripted player awaited something; drive it with asyncio instead")


class Player:
    """An environment's own scripted player, fed only what the framework showed the model.

    Call :meth:`act` for the next call, then :meth:`saw` with the text the framework returned.
    :attr:`calls_left` bounds every episode, so a driver whose episode never ends still stops.
    """

    def __init__(self, cell: Cell, prompt: str) -> None:
        module, _, name = cell.env_class.policies[cell.policy].partition(":")
        self.policy = getattr(importlib.import_module(module), name)()
        self.episode = Episode(cell.env, 0, cell.task_id, None, cell.policy, prompt=Observation.of(prompt))
        self.calls_left = MAX_CALLS

    def act(self) -> ToolCall:
        if self.calls_left <= 0:
            raise RuntimeError(f"the episode did not end within {MAX_CALLS} calls")
        self.calls_left -= 1
        call = _now(self.policy.act(self.episode))
        return ToolCall(call.name, {key: _plain(value) for key, value in call.arguments.items()})

    def saw(self, call: ToolCall, text: str) -> None:
        result = StepResult(Observation((TextBlock(text),)), 0.0, False, False, {})
        self.episode.steps.append(Step(call, result, 0.0))


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a PNG, or None when ``data`` is no PNG."""
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def image_report(carried_as: str, data: bytes) -> dict[str, Any]:
    """One image as it reached the model: how the framework carried it, and its PNG size."""
    size = png_size(data)
    return {"as": carried_as, "size": list(size) if size else None}


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{2000,}")


def crash_report(reward: Any, signal: str, masked: bool) -> dict[str, Any]:
    """The crash episode as the framework reported it.

    ``reward`` is the framework's own reward value for the crashed step or episode (None when it
    has none; NaN is reported as the string "nan"); ``signal`` names the framework's own masking
    mechanism that said so (e.g. ``"mask_sample"``, ``"reward=None"``); ``masked`` is whether a
    trainer using that framework would leave the episode out.
    """
    if isinstance(reward, float) and math.isnan(reward):
        reward = "nan"
    return {"reward": reward, "signal": signal, "masked": bool(masked)}


def cell_report(
    env: str,
    *,
    rewards: list[float] | None,
    total: float | None,
    done: bool,
    crash: dict[str, Any],
    seen: Iterable[Any],
    texts: Iterable[str] = (),
    images: Iterable[dict[str, Any]] = (),
    notes: str = "",
) -> dict[str, Any]:
    """The report of one cell.

    ``rewards``: the per-step rewards the framework reported (None when it reports only an
    episode's reward); ``total``: the episode's reward as the framework reports it; ``done``: its
    own end signal; ``seen``: everything the framework showed the agent besides tool output
    (dataset rows, prompts, system prompts, info and metadata dicts), searched for the answer;
    ``texts``: every tool output the model read as text (searched for base64 images);
    ``images``: :func:`image_report` of each image that reached the model as an image.
    """
    return {
        "kind": "cell",
        "env": env,
        "rewards": rewards,
        "total": total,
        "done": bool(done),
        "crash": crash,
        "seen": json.dumps(list(seen), default=repr),
        "base64_in_text": any(_BASE64_RUN.search(text) for text in texts),
        "images": list(images),
        "notes": notes,
    }


def print_report(report: dict[str, Any]) -> None:
    """Print one report as the JSON line the matrix reads (drivers in peers' virtualenvs)."""
    print(json.dumps(report, default=repr), flush=True)
