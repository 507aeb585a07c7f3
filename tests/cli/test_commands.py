"""What a person meets at the terminal: `omnienv play` to the end of an episode, and the commands'
error messages when the environment, the task or the file is wrong."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from omnienv.cli.main import app
from omnienv.core import Environment, ImageBlock, Task, ToolResult, tool

runner = CliRunner(env={"COLUMNS": "200"})

PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)


class Snapshot(Environment):
    """A two-step environment whose tools answer with an image, or break."""

    name = "snapshot"
    max_turns = 2
    blocking = False

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "Take a picture."

    @tool
    def picture(self, caption: str) -> ToolResult:
        """Take a picture.

        Args:
            caption: What to write under it.
        """
        return ToolResult.of([caption, ImageBlock(PNG)])

    @tool
    def crash(self) -> str:
        """Fail as a broken simulator does."""
        raise RuntimeError("the camera is unplugged")


SNAPSHOT = f"{__name__}:Snapshot"


def test_play_runs_to_the_turn_limit_and_shows_images() -> None:
    keystrokes = "\n:help\npicture caption=hi there\npicture hello\npicture [again]\n"
    result = runner.invoke(app, ["play", SNAPSHOT], input=keystrokes)
    assert result.exit_code == 0, result.output
    assert "Take a picture." in result.output and "picture" in result.output  # prompt and tools table
    assert result.output.count("Type a tool call") >= 3  # the banner, then :help and the empty line
    assert "expected key=value, got 'there'; picture takes caption" in result.output
    assert "[image image/png, 32 bytes]" in result.output and "[again]" in result.output  # shown as written
    assert "Episode truncated (turn limit)." in result.output


def test_play_reports_an_environment_failure_and_stops() -> None:
    result = runner.invoke(app, ["play", SNAPSHOT], input="crash\npicture never\n")
    assert result.exit_code == 0, result.output
    assert "environment failure:" in result.output and "the camera is unplugged" in result.output
    assert "never" not in result.output.split("environment failure:")[1]


def test_play_ends_quietly_when_input_ends_or_on_quit() -> None:
    for keystrokes in ("", "{not json\n:quit\n"):
        result = runner.invoke(app, ["play", SNAPSHOT], input=keystrokes)
        assert result.exit_code == 0, result.output
        assert "Episode" not in result.output


def test_play_names_an_unknown_environment() -> None:
    result = runner.invoke(app, ["play", "wordel"])
    assert result.exit_code == 2
    assert "wordle" in result.output  # the suggestion


def test_mcp_refuses_an_unknown_task_before_serving() -> None:
    result = runner.invoke(app, ["mcp", "wordle", "--task-id", "test/9999"])
    assert result.exit_code == 2
    assert "no task 'test/9999'" in result.output


def test_view_needs_a_trajectory_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["view", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2
    assert "no trajectory file at" in result.output and "--out" in result.output


def test_serve_nemo_gym_serves_its_routes_alone(monkeypatch: Any) -> None:
    served: list[Any] = []
    monkeypatch.setattr("omnienv.server.serve", lambda app, *args, **kwargs: served.append(app))
    result = runner.invoke(app, ["serve", "wordle", "--nemo-gym", "--no-ui"])
    assert result.exit_code == 0, result.output
    paths = {route.path for route in served[0].routes}
    assert {"/seed_session", "/verify", "/reset", "/step", "/close", "/guess"} <= paths
    assert "/ws" not in paths and "/mcp" not in paths  # NeMo's agents post to /reset and /step: ours stay out
    refused = runner.invoke(app, ["serve", "wordle", "--nemo-gym", "--agent-only"])
    assert refused.exit_code != 0 and "drop --ray and --agent-only" in " ".join(refused.output.split())  # wrapped
