"""Desktop: the screenshot tool and a fresh reset, against raw X captures of the same display.

Measured side by side in one run, on one 1024x768 Xvfb desktop with a terminal, an editor and a
clock open:

- screenshot tool: ``Desktop.step(screenshot)``, capture (XGetImage: the server runs without
  MIT-SHM, see ``omnienv.sandboxes.xvfb.server``) + PNG + the step's bookkeeping;
- action + screenshot: ``left_click`` and ``mouse_move`` with ``screenshot_after_action``, the
  input sent through XTEST on the host's own X connection;
- raw references: ``xwd -root`` of the same display (the classic X dump, uncompressed, what a
  shell script would run), ``import -window root png:-`` when ImageMagick is installed, and the
  bare in-process capture without encoding (the floor);
- reset: ``Desktop.reset`` of a one-app task with a warm display waiting in the pool, against a
  reset that must boot Xvfb and the window manager itself (pool of size 0); and, for scale, the
  reset of a spreadsheet task (Gnumeric starting and loading its workbook until it is idle).

Targets: screenshot p50 <= 50 ms; action + screenshot p50 <= 30 ms; reset p50 <= 1 s from the pool.

    python benchmarks/desktop.py [--shots 200] [--resets 20]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._harness import percentile
from omnienv.core import ToolCall
from omnienv.envs.desktop import Desktop
from omnienv.sandboxes.xvfb import DisplayPool, DisplaySpec, XvfbDisplay

__all__ = ["main"]

SHOT_TARGET_MS = 50.0
ACTION_TARGET_MS = 30.0
RESET_TARGET_MS = 1000.0
EMPTY_DESKTOP = [900, 700]  # a left click on openbox's root window does nothing


class UnboundedDesktop(Desktop):
    """The same environment without a turn limit, so one episode can take every sample."""

    name = "desktop"
    max_turns = None


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1e3


async def measure_shots(env: Desktop, samples: int) -> dict[str, list[float]]:
    """Every way of capturing, interleaved sample by sample so that load on the machine hits all alike."""
    display = env.desktop
    assert isinstance(display, XvfbDisplay)
    call = ToolCall("screenshot", {})
    grabber = display._grabber
    dump = ["xwd", "-root", "-silent", "-display", display.name]
    magick = ["import", "-display", display.name, "-window", "root", "png:-"]
    ways: dict[str, Callable[[], object]] = {
        "capture + PNG, no step": display.screenshot_png,
        "bare capture (mss, no encoding)": grabber.grab,
        "raw: xwd -root (subprocess)": lambda: subprocess.run(dump, stdout=subprocess.DEVNULL, check=True),
    }
    if shutil.which("import"):
        ways["raw: import -window root png:-"] = lambda: subprocess.run(magick, stdout=subprocess.DEVNULL, check=True)
    results: dict[str, list[float]] = {"screenshot tool (capture + PNG + step)": []}
    results.update({label: [] for label in ways})
    for _ in range(samples):
        started = time.perf_counter()
        result = await env.step(call)
        results["screenshot tool (capture + PNG + step)"].append((time.perf_counter() - started) * 1e3)
        assert not result.observation.is_error
        for label, fn in ways.items():
            results[label].append(timed(fn))
    return {label: sorted(values) for label, values in results.items()}


async def measure_actions(env: Desktop, samples: int) -> dict[str, list[float]]:
    """One tool call that acts and returns a fresh screenshot (``screenshot_after_action``)."""
    calls = {
        "left_click + screenshot": ToolCall("left_click", {"coordinate": EMPTY_DESKTOP}),
        "mouse_move + screenshot": ToolCall("mouse_move", {"coordinate": [500, 400]}),
    }
    results: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(samples):
        for label, call in calls.items():
            started = time.perf_counter()
            result = await env.step(call)
            results[label].append((time.perf_counter() - started) * 1e3)
            assert not result.observation.is_error and result.observation.content[-1].type == "image"
    return {label: sorted(values) for label, values in results.items()}


async def measure_resets(
    env: Desktop, pool: DisplayPool, samples: int, task: str = "train/terminal-echo"
) -> list[float]:
    out = []
    for index in range(samples):
        if pool.size:
            pool.wait_ready(1)  # a warm display is waiting, as between episodes of a steady run
        started = time.perf_counter()
        await env.reset(task=task, seed=index)
        out.append((time.perf_counter() - started) * 1e3)
    return sorted(out)


def row(table: Table, label: str, values: list[float], reference: float | None) -> None:
    p50, p99 = percentile(values, 50), percentile(values, 99)
    ratio = f"{p50 / reference:.2f}x" if reference else "—"
    table.add_row(label, str(len(values)), f"{p50:.2f}", f"{p99:.2f}", ratio)


async def run(shots: int, resets: int) -> None:
    console = Console()
    warm_pool, cold_pool = DisplayPool(DisplaySpec(), size=2), DisplayPool(DisplaySpec(), size=0)
    warm, cold = UnboundedDesktop(pool=warm_pool), UnboundedDesktop(pool=cold_pool)
    acting = UnboundedDesktop(pool=warm_pool, screenshot_after_action=True)
    try:
        warm_pool.wait_ready()
        await warm.reset(task="test/editor-replace")
        await warm.desktop.launch("xterm -geometry 60x20+20+380", "terminal")
        await warm.desktop.launch("xclock -geometry 150x150+600+450", "clock")
        await warm.desktop.wait_for_app("clock")
        await warm.step(ToolCall("screenshot", {}))  # connect the grabber once
        status = warm.desktop._grabber.performance_status  # type: ignore[attr-defined]
        shot_results = await measure_shots(warm, shots)
        warm_pool.wait_ready()
        await acting.reset(task="train/terminal-echo")
        action_results = await measure_actions(acting, max(50, shots // 2))
        warm_resets = await measure_resets(warm, warm_pool, resets)
        document_resets = await measure_resets(warm, warm_pool, max(5, resets // 2), "train/spreadsheet-sum")
        cold_resets = await measure_resets(cold, cold_pool, max(5, resets // 2))
    finally:
        await warm.close()
        await cold.close()
        await acting.close()
        warm_pool.close()
        cold_pool.close()

    reference = percentile(shot_results["raw: xwd -root (subprocess)"], 50)
    table = Table(
        "what",
        "n",
        "p50 (ms)",
        "p99 (ms)",
        "p50 / xwd p50",
        title="desktop screenshot at 1024x768 (same display, same run)",
    )
    for label, values in shot_results.items():
        row(table, label, values, reference)
    console.print(table)
    actions_table = Table(
        "action", "n", "p50 (ms)", "p99 (ms)", "p50 / xwd p50", title="one tool call: act, then a fresh screenshot"
    )
    for label, values in action_results.items():
        row(actions_table, label, values, reference)
    console.print(actions_table)
    if status:
        console.print(f"capture path: {'; '.join(status)}")
    resets_table = Table(
        "reset",
        "n",
        "p50 (ms)",
        "p99 (ms)",
        "p50 / cold p50",
        title="Desktop.reset of a one-app task (terminal, unless named)",
    )
    cold_p50 = percentile(cold_resets, 50)
    row(resets_table, "from the warm pool", warm_resets, cold_p50)
    row(resets_table, "cold: boot Xvfb + window manager", cold_resets, cold_p50)
    row(resets_table, "from the warm pool: Gnumeric opening a workbook", document_resets, cold_p50)
    console.print(resets_table)
    shot_p50 = percentile(shot_results["screenshot tool (capture + PNG + step)"], 50)
    action_p50 = percentile(action_results["left_click + screenshot"], 50)
    reset_p50 = percentile(warm_resets, 50)
    for label, value, target in (
        ("screenshot tool p50", shot_p50, SHOT_TARGET_MS),
        ("action + screenshot p50 (left_click)", action_p50, ACTION_TARGET_MS),
        ("reset p50 from the pool", reset_p50, RESET_TARGET_MS),
    ):
        verdict = "meets" if value <= target else "misses"
        console.print(f"{label}: {value:.1f} ms — {verdict} the target of <= {target:g} ms")
    console.print(f"screenshot tool vs raw xwd capture: {shot_p50 / reference:.2f}x the time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shots", type=int, default=200)
    parser.add_argument("--resets", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(run(args.shots, args.resets))


if __name__ == "__main__":
    main()
