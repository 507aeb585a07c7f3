"""Bad input through the real console script: a typed error that names the fix, exit code 2, and
never a traceback. Each case is one ``python -m omnienv.cli.main`` in a config of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.net import free_port

HARBOR = {"OMNIENV_HARBOR_ENV": "wordle", "OMNIENV_HARBOR_TASK": "train/0000"}
"""A task ``omnienv export harbor`` would write: the environment and task its Dockerfile names."""


ENDLESS = """
from omnienv.core import Environment, Task, tool


class Endless(Environment):
    \"\"\"Ping as often as you like.\"\"\"

    splits = ("test",)

    @classmethod
    def tasks(cls, split):
        return (Task("test/0", "test"),)

    @tool
    def ping(self) -> str:
        \"\"\"Answer pong.\"\"\"
        return "pong"
"""


def omnienv(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "COLUMNS": "200",
        **env,
    }
    command = [sys.executable, "-m", "omnienv.cli.main", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=environ)


def refused(result: subprocess.CompletedProcess[str], message: str) -> None:
    """Exit 2 with ``message`` (rich wraps long lines) and no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert message in " ".join(result.stderr.split()), result.stderr


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ('{"imports": {"x": 5}}', ["play", "x"]),
        ('{"imports": []}', ["list", "--source", "openenv"]),
        ("[1, 2]", ["list"]),
    ],
)
def test_an_imports_file_of_the_wrong_shape_says_how_to_fix_it(tmp_path: Path, text: str, command: list[str]) -> None:
    path = tmp_path / "config" / "omnienv" / "imports.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    result = omnienv(tmp_path, *command)
    refused(result, f"cannot read {path}: it must hold")
    assert "fix or delete it" in " ".join(result.stderr.split())


@pytest.mark.parametrize("name", ["", "bad name!"])
def test_an_import_is_refused_a_name_no_command_could_take(tmp_path: Path, name: str) -> None:
    result = omnienv(tmp_path, "import", "openenv", "http://127.0.0.1:9", "--name", name, "--no-check")
    refused(result, f"'{name}' is not a usable name: use letters, digits, '-' and '_'")
    assert not (tmp_path / "config" / "omnienv" / "imports.json").exists()


@pytest.mark.parametrize(
    ("log", "why"),
    [(b"{bad\n", "not JSON"), (b"[1,2]\n", "not an object with the tool's 'name'"), (b"\xff\n", "not JSON")],
)
def test_a_broken_call_log_is_an_error_never_a_score(tmp_path: Path, log: bytes, why: str) -> None:
    calls = tmp_path / "omnienv" / "calls.jsonl"
    calls.parent.mkdir()
    calls.write_bytes(log)
    out = tmp_path / "reward.json"
    result = omnienv(tmp_path, "harbor", "grade", "--out", str(out), OMNIENV_HARBOR_DIR=str(calls.parent), **HARBOR)
    refused(result, f"the call log {calls} is broken at line 1 ({why}")
    assert not out.exists()


def test_an_episode_s_calls_past_the_limit_are_refused_never_dropped(tmp_path: Path) -> None:
    """The replay read the first 500 calls and dropped the rest without a word: an act past them was
    answered, then left out of the grade. The 501st act is refused; a log holding more is an error."""
    (tmp_path / "endless.py").write_text(ENDLESS)  # no turn limit, as many an environment has
    calls = tmp_path / "omnienv" / "calls.jsonl"
    calls.parent.mkdir()
    calls.write_bytes(b'{"name": "ping", "arguments": {}}\n' * 500)
    where = {"OMNIENV_HARBOR_DIR": str(calls.parent), "OMNIENV_HARBOR_ENV": "endless:Endless"}
    where["OMNIENV_HARBOR_TASK"] = "test/0"
    refused(omnienv(tmp_path, "harbor", "act", "ping", **where), "has made its 500 calls")
    assert calls.read_bytes().count(b"\n") == 500
    calls.write_bytes(calls.read_bytes() + b'{"name": "ping", "arguments": {}}\n')
    result = omnienv(tmp_path, "harbor", "grade", "--out", str(tmp_path / "reward.json"), **where)
    refused(result, f"the call log {calls} holds 501 calls, more than the 500 an episode may make")
    assert not (tmp_path / "reward.json").exists()


def test_the_harbor_variables_are_named_when_wrong(tmp_path: Path) -> None:
    seed = omnienv(tmp_path, "harbor", "act", "guess", '{"word": "crane"}', OMNIENV_HARBOR_SEED="abc", **HARBOR)
    refused(seed, "OMNIENV_HARBOR_SEED='abc' is not a whole number: it holds the task's seed")
    (tmp_path / "file").write_text("")
    folder = omnienv(
        tmp_path, "harbor", "grade", "--out", "r.json", OMNIENV_HARBOR_DIR=str(tmp_path / "file"), **HARBOR
    )
    refused(folder, f"OMNIENV_HARBOR_DIR={tmp_path / 'file'} is not a directory")
    assert not (tmp_path / "r.json").exists()


def test_a_harbor_folder_says_what_its_tasks_lack(tmp_path: Path) -> None:
    (tmp_path / "suite" / "one").mkdir(parents=True)
    (tmp_path / "suite" / "one" / "task.toml").write_text('version = "1.0"\n')
    refused(omnienv(tmp_path, "play", "suite"), "suite/one is not a Harbor task: it has no instruction.md")


def test_checking_a_server_that_is_down_says_so_once(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = omnienv(tmp_path, "check", url)
    refused(result, f"cannot reach the server at {url}: cannot connect")
    assert "FAIL" not in result.stdout
