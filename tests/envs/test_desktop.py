"""The desktop environment on real Xvfb displays: its tools, coordinates, failures and transports.

Every task, solved and faked, is in ``test_desktop_tasks.py``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import struct
import time
from collections.abc import Iterator

import pytest

from omnienv.core import EnvironmentFailure, ImageBlock, ToolCall, ToolError, check_env, load_environment
from omnienv.envs.desktop import DESKTOP_TASKS, Coordinates, Desktop
from omnienv.envs.desktop.player import SCRIPTS, DesktopScripted
from omnienv.rollout.loop import EpisodePlan, arun_episode
from omnienv.sandboxes.xvfb import DisplayPool, DisplaySpec, XvfbDisplay, missing_programs, shared_pool
from tests.busy_executor import default_executor_busy
from tests.server.conftest import serve  # noqa: F401  (the fixture of real servers)

DESKTOP_PROGRAMS = ("Xvfb", "bwrap", "openbox", "xterm", "xedit", "xclock", "xcalc", "gnumeric", "pcmanfm")
pytestmark = pytest.mark.skipif(
    bool(missing_programs(DESKTOP_PROGRAMS)),
    reason="X programs or bubblewrap missing: run 'make system-deps'",
)


@pytest.fixture(scope="module")
def pool() -> Iterator[DisplayPool]:
    displays = DisplayPool(DisplaySpec(), size=2)
    try:
        yield displays
    finally:
        displays.close()


@pytest.fixture
def env(pool: DisplayPool) -> Iterator[Desktop]:
    desktop = Desktop(pool=pool)
    try:
        yield desktop
    finally:
        asyncio.run(desktop.close())


def play(env: Desktop, task_id: str, policy: DesktopScripted | None = None):  # type: ignore[no-untyped-def]
    return asyncio.run(arun_episode(env, policy or DesktopScripted(), EpisodePlan(0, task_id, 0)))


def test_registered_and_has_the_reference_tools() -> None:
    assert load_environment("desktop") is Desktop
    assert list(Desktop.tools) == [
        "screenshot",
        "cursor_position",
        "get_screen_size",
        "left_click",
        "right_click",
        "middle_click",
        "double_click",
        "triple_click",
        "mouse_move",
        "left_click_drag",
        "left_mouse_down",
        "left_mouse_up",
        "scroll",
        "type",
        "key",
        "hold_key",
        "wait",
        "terminate",
        "run_command",
    ]
    click = Desktop.tools["left_click"].parameters
    assert click["required"] == ["coordinate"]
    assert click["properties"]["coordinate"]["items"] == {"type": "integer"}
    assert click["properties"]["text"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    scroll = Desktop.tools["scroll"].parameters
    assert scroll["required"] == ["coordinate", "scroll_direction", "scroll_amount"]
    assert Desktop.tools["left_mouse_down"].parameters.get("required", []) == []
    assert Desktop.tools["hold_key"].parameters["properties"]["duration"]["type"] == "number"
    assert len(DESKTOP_TASKS) >= 30
    assert set(SCRIPTS) == set(DESKTOP_TASKS)


_POINT = {"items": {"type": "integer"}, "type": "array"}
_MODS = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
_COORD = ({"coordinate": _POINT, "text": _MODS}, ["coordinate"])
_OPT = ({"coordinate": {"anyOf": [_POINT, {"type": "null"}], "default": None}}, [])
REFERENCE_SCHEMAS = {  # the reference's input schemas, titles and descriptions left out
    "screenshot": ({}, []),
    "cursor_position": ({}, []),
    "get_screen_size": ({}, []),
    "left_click": _COORD,
    "right_click": _COORD,
    "middle_click": _COORD,
    "double_click": _COORD,
    "triple_click": _COORD,
    "mouse_move": ({"coordinate": _POINT}, ["coordinate"]),
    "left_click_drag": (
        {"start_coordinate": _POINT, "coordinate": _POINT, "text": _MODS},
        ["start_coordinate", "coordinate"],
    ),
    "left_mouse_down": _OPT,
    "left_mouse_up": _OPT,
    "scroll": (
        {
            "coordinate": _POINT,
            "scroll_direction": {"type": "string"},
            "scroll_amount": {"type": "integer"},
            "text": _MODS,
        },
        ["coordinate", "scroll_direction", "scroll_amount"],
    ),
    "type": ({"text": {"type": "string"}}, ["text"]),
    "key": ({"keys": {"type": "string"}}, ["keys"]),
    "hold_key": ({"keys": {"type": "string"}, "duration": {"type": "number"}}, ["keys", "duration"]),
    "wait": ({"duration": {"type": "number"}}, ["duration"]),
    "terminate": ({"status": {"type": "string"}}, ["status"]),
    "run_command": ({"command": {"type": "string"}}, ["command"]),
}


def test_tool_schemas_match_the_reference() -> None:
    assert set(Desktop.tools) == set(REFERENCE_SCHEMAS)
    for name, (properties, required) in REFERENCE_SCHEMAS.items():
        schema = Desktop.tools[name].parameters
        got = {key: {k: v for k, v in prop.items() if k != "description"} for key, prop in schema["properties"].items()}
        assert got == properties, name
        assert schema.get("required", []) == required, name


def test_check_env_passes() -> None:
    try:
        report = check_env(Desktop)
    finally:
        shared_pool(DisplaySpec()).close()
    assert report.ok, report.failures


@pytest.mark.parametrize(
    "task_id", ["train/terminal-echo", "train/close-clock", "test/editor-replace", "train/spreadsheet-sum"]
)
def test_claiming_success_without_doing_the_task_scores_nothing(env: Desktop, task_id: str) -> None:
    async def run() -> float:
        await env.reset(task=task_id)
        result = await env.step(ToolCall("terminate", {"status": "success"}))
        assert result.done and result.info["terminate_status"] == "success"
        assert result.info["success"] is False
        return result.reward

    assert asyncio.run(run()) == 0.0


def test_every_tool_acts_on_the_display(env: Desktop) -> None:
    async def run() -> None:
        await env.reset(task="train/terminal-echo")

        async def call(name: str, **arguments: object) -> str:
            result = await env.step(ToolCall(name, dict(arguments)))
            assert not result.observation.is_error, (name, result.observation.text)
            return result.observation.text

        shot = await env.step(ToolCall("screenshot", {}))
        image = shot.observation.content[0]
        assert isinstance(image, ImageBlock) and image.mime_type == "image/png"
        assert struct.unpack(">II", image.data[16:24]) == (1024, 768)
        assert await call("get_screen_size") == "1024x768"
        assert await call("mouse_move", coordinate=[400, 300]) == "Moved cursor to (400,300)"
        assert await call("cursor_position") == "400,300"
        await call("left_click", coordinate=[250, 180])
        await call("type", text="echo one > a.txt")
        await call("key", keys="enter")
        await call("right_click", coordinate=[250, 180])
        await call("key", keys="Escape")
        await call("middle_click", coordinate=[700, 600])
        await call("double_click", coordinate=[250, 180], text="shift")
        await call("triple_click", coordinate=[250, 180])
        await call("left_mouse_down", coordinate=[260, 200])
        await call("left_mouse_up")
        await call("left_click_drag", start_coordinate=[20, 40], coordinate=[200, 40])
        await call("scroll", coordinate=[250, 180], scroll_direction="down", scroll_amount=3)
        await call("hold_key", keys="shift", duration=0.1)
        assert await call("wait", duration=0.05) == "Waited 0.05s"
        assert "one" in await call("run_command", command="cat a.txt")
        assert await call("run_command", command="echo oops >&2; exit 2") == "\nSTDERR: oops\n\n(exit code 2)"
        assert await call("run_command", command="echo out; echo careful >&2") == "out\n\nSTDERR: careful\n"
        assert await call("run_command", command="true") == "(no output)"
        assert env.desktop.width == 1024

    asyncio.run(run())


def test_agent_mistakes_are_error_observations(env: Desktop) -> None:
    async def run() -> None:
        await env.reset(task="train/terminal-echo")
        for name, arguments, expected in [
            ("left_click", {"coordinate": [5000, 10]}, "off the screen"),
            ("left_click", {"coordinate": [1, 2, 3]}, "[x, y]"),
            (
                "scroll",
                {"coordinate": [10, 10], "scroll_direction": "sideways", "scroll_amount": 1},
                "scroll_direction",
            ),
            ("key", {"keys": "NoSuchKey"}, "unknown key name"),
            ("terminate", {"status": "done"}, "success"),
            ("wait", {"duration": 1000}, "duration"),
        ]:
            result = await env.step(ToolCall(name, arguments))
            assert result.observation.is_error and expected in result.observation.text, result
            assert result.failure is None and not result.over

    asyncio.run(run())


def test_a_display_that_dies_is_a_failure_not_a_score(env: Desktop) -> None:
    async def run() -> None:
        await env.reset(task="train/terminal-echo")
        display = env.desktop
        assert isinstance(display, XvfbDisplay)
        os.kill(display.server.pid, signal.SIGKILL)
        display.process.wait()
        result = await env.step(ToolCall("screenshot", {}))
        assert result.failure is not None and result.failure.kind == "env_error"
        assert "display" in result.failure.message
        assert env.failure is not None

    asyncio.run(run())


def test_normalised_coordinates_are_rescaled() -> None:
    space = Coordinates((1024, 768), (1000, 1000))
    assert space.to_pixels([500, 500]) == (512, 384)
    assert space.to_pixels([999, 999]) == (1023, 767)
    assert space.to_pixels([1000, 0]) == (1023, 0)
    assert space.to_pixels([0, 0]) == (0, 0)
    for outside in ([1001, 5], [-1, 5]):
        with pytest.raises(ToolError):
            space.to_pixels(outside)
    pixels = Coordinates((1024, 768), None)
    assert pixels.to_pixels([1023, 767]) == (1023, 767)
    with pytest.raises(ToolError):
        pixels.to_pixels([1024, 0])
    assert space.from_pixels(512, 384) == (500, 500)
    assert "1000x1000" in space.describe()


@pytest.mark.parametrize("task_id", ["test/move-clock", "train/editor-type", "test/files-move"])
def test_a_normalised_policy_completes_tasks(pool: DisplayPool, task_id: str) -> None:
    env = Desktop(coordinate_space=(1000, 1000), pool=pool)
    try:
        episode = play(env, task_id, DesktopScripted(coordinate_space=(1000, 1000)))
        assert "1000x1000" in episode.prompt.text
        assert episode.reward == 1.0, [(s.call, s.result.observation.text) for s in episode.steps]

        async def cursor() -> str:
            await env.reset(task="train/terminal-echo")
            await env.step(ToolCall("mouse_move", {"coordinate": [250, 750]}))
            assert await env.desktop.cursor() == (256, 576)
            return (await env.step(ToolCall("cursor_position", {}))).observation.text

        assert asyncio.run(cursor()) == "250,750"
    finally:
        asyncio.run(env.close())


def test_screenshot_after_action(pool: DisplayPool) -> None:
    env = Desktop(screenshot_after_action=True, pool=pool)

    async def run() -> None:
        await env.reset(task="train/terminal-echo")
        result = await env.step(ToolCall("mouse_move", {"coordinate": [10, 10]}))
        kinds = [block.type for block in result.observation.content]
        assert kinds == ["text", "image"]

    try:
        asyncio.run(run())
    finally:
        asyncio.run(env.close())


def test_make_policy_knows_the_scripted_desktop_player() -> None:
    from omnienv.rollout import make_policy

    assert Desktop.policies == {"scripted": "omnienv.envs.desktop.player:DesktopScripted"}
    assert isinstance(make_policy("scripted", Desktop)(), DesktopScripted)


def test_e2b_backend_without_sdk_or_key_is_a_clear_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    env = Desktop(backend="e2b")
    with pytest.raises(EnvironmentFailure) as caught:
        asyncio.run(env.reset(task="train/terminal-echo"))
    assert "e2b-desktop" in str(caught.value) or "E2B_API_KEY" in str(caught.value)
    asyncio.run(env.close())


def test_a_cancelled_reset_strands_no_display() -> None:
    started: list[XvfbDisplay] = []

    def start(spec: DisplaySpec) -> XvfbDisplay:
        display = XvfbDisplay.start(spec)
        started.append(display)
        return display

    pool = DisplayPool(DisplaySpec(), size=0, start=start)  # no warm displays: reset must boot one
    env = Desktop(pool=pool)

    async def run() -> None:
        reset = asyncio.ensure_future(env.reset(task="train/terminal-echo"))
        await asyncio.sleep(0.02)
        reset.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reset

    try:
        asyncio.run(run())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (started and all(not d.alive() for d in started)):
            time.sleep(0.02)
    finally:
        pool.close()
    assert started, "the reset never asked for a display"
    assert all(not display.alive() for display in started)


def test_an_episode_never_waits_on_the_event_loops_default_executor() -> None:
    """That executor's few threads can all be held by other sessions' long commands, or by resets
    waiting for a display to boot: a display wait, a command, an app's launch and the close that
    queued there would wait for all of those."""
    pool = DisplayPool(DisplaySpec(), size=0)  # no warm display: the reset waits for one to boot
    env = Desktop(pool=pool)

    async def run() -> None:
        async with default_executor_busy(), asyncio.timeout(60):
            await env.reset(task="train/terminal-echo")  # its task launches a terminal
            result = await env.step(ToolCall("run_command", {"command": "echo ran"}))
            assert result.observation.text.strip() == "ran", result.observation.text
            await env.close()

    try:
        asyncio.run(run())
    finally:
        pool.close()


def test_played_over_the_websocket_with_screenshots(request: pytest.FixtureRequest) -> None:
    from omnienv.client.websocket import AsyncWebSocketClient

    served = request.getfixturevalue("serve")("desktop")

    async def run() -> None:
        client = await AsyncWebSocketClient.connect(served.url)
        try:
            assert len(client.tools) == 19
            episode = await arun_episode(client, DesktopScripted(), EpisodePlan(0, "test/move-clock", 0))
            assert episode.failure is None and episode.reward == 1.0
            image = episode.steps[0].result.observation.content[0]
            assert isinstance(image, ImageBlock) and image.data[:8] == b"\x89PNG\r\n\x1a\n"
        finally:
            await client.close()

    try:
        asyncio.run(run())
    finally:
        served.stop()
        shared_pool(DisplaySpec()).close()


def test_importing_the_environment_stays_light() -> None:
    import subprocess
    import sys

    heavy = ("mss", "starlette", "uvicorn", "websockets", "httpx", "e2b_desktop", "jupyter_client")
    code = f"import sys, omnienv.envs.desktop; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == ""
