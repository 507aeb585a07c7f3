"""OpenEnv 0.10.0's own clients and tools against our Wordle server.

The clients run in OpenEnv's virtualenv (``tests/peers/openenv/wordle_client.py``): GenericEnvClient
(sync, dual-mode, async), a typed EnvClient subclass, MCPToolClient (async and sync), every public
method of theirs (``reset``, ``step``, ``state``, ``close``, ``connect``, ``disconnect``,
``new_session``, ``sync``, ``base_url``, ``list_tools``, ``call_tool``, ``get_tool``, ``has_tool``)
but the two that start a Docker container or a Hugging Face Space (``from_docker_image``,
``from_env``), plus ``openenv validate --url``.
This module starts the servers, computes the answer of a known task with our Wordle, and asserts on
what OpenEnv's side reported. The same assertions also run against a Wordle served by OpenEnv itself
(``benchmarks/openenv_wordle``), which proves they describe OpenEnv's behaviour and not merely ours.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from omnienv.envs.wordle.env import MAX_ATTEMPTS, Wordle, accepted_words
from tests.net import free_port, healthy
from tests.peerenv import ROOT, peer_python

SCRIPT = ROOT / "tests" / "peers" / "openenv" / "wordle_client.py"
TASK_ID = "test/0003"
GAMES = ("generic-sync", "generic-dual", "generic-async", "typed-sync", "typed-async")
SERVERS = ("omnienv", "openenv")
OTHERS = ("validation", "mcp-tool-client", "mcp-tool-client-sync", "lifecycle-sync", "lifecycle-async")
START_DEADLINE_S = 60.0
CLIENT_TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def openenv_python() -> Path:
    return peer_python("openenv")


@pytest.fixture(scope="module")
def solution() -> tuple[str, str]:
    """A valid wrong guess and the answer of ``TASK_ID``, from our own Wordle."""
    answer = Wordle.task_index().find(TASK_ID, "test").answer
    wrong = next(w for w in ("crane", "slate", "pious") if w != answer and w in accepted_words())
    return wrong, answer


@contextmanager
def _server(kind: str, max_sessions: int, openenv_python: Path) -> Iterator[str]:
    """Start one Wordle server on a free port, wait for /health, and always reap it.

    Output goes to a file opened in append mode (read back for the port and for failures), so a chatty
    server can never block on a full pipe.
    """
    if kind == "omnienv":
        port = free_port()
        cmd = [
            str(Path(sys.executable).with_name("omnienv")),
            "serve",
            "wordle",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--max-sessions",
            str(max_sessions),
        ]
    else:
        port = 0  # the OpenEnv server binds port 0 itself and prints "PORT n"
        cmd = [
            str(openenv_python),
            "-m",
            "benchmarks.openenv_wordle.server",
            "--variant",
            "mcp",
            "--port",
            "0",
            "--max-sessions",
            str(max_sessions),
        ]
    with tempfile.TemporaryDirectory(prefix="omnienv-openenv-peer-") as tmp:
        log = Path(tmp) / "server.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + START_DEADLINE_S
            while not (port and healthy(f"http://127.0.0.1:{port}")):
                if not port:
                    match = re.search(r"^PORT (\d+)", log.read_text(errors="replace"), re.MULTILINE)
                    port = int(match.group(1)) if match else 0
                if proc.poll() is not None:
                    pytest.fail(f"{kind} server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
                if time.monotonic() > deadline:
                    pytest.fail(f"{kind} server not healthy within {START_DEADLINE_S} s:\n{log.read_text()[-3000:]}")
                time.sleep(0.02)
            yield f"http://127.0.0.1:{port}"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)


Solution = tuple[str, str]


def _run_client(openenv_python: Path, url: str, solution: Solution, *scenarios: str) -> dict[str, dict]:
    wrong, answer = solution
    done = subprocess.run(
        [str(openenv_python), str(SCRIPT), url, TASK_ID, wrong, answer, *scenarios],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"client script failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    results = {}
    for line in done.stdout.splitlines():
        record = json.loads(line)
        results[record.pop("scenario")] = record
    assert set(results) == set(scenarios), done.stdout
    return results


@pytest.fixture(scope="module", params=SERVERS)
def played(request: pytest.FixtureRequest, openenv_python: Path, solution: Solution) -> dict[str, dict]:
    """Every game scenario and the validation scenario, against one server with room to spare."""
    with _server(request.param, 8, openenv_python) as url:
        played = _run_client(openenv_python, url, solution, *GAMES, *OTHERS)
        validate = subprocess.run(
            [str(openenv_python.with_name("openenv")), "validate", "--url", url, "--json"],
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT_S,
            cwd=ROOT,
        )
    played["openenv-validate"] = {
        "returncode": validate.returncode,
        "stdout": validate.stdout,
        "stderr": validate.stderr[-3000:],
    }
    return played


def _no_error(record: dict) -> None:
    assert "error" not in record, f"{record['error']}\n" + "\n".join(record.get("traceback", []))


def _win_reward(guesses: int) -> float:
    return 1.0 + 0.5 * (1 - guesses / MAX_ATTEMPTS)


@pytest.mark.parametrize("scenario", GAMES)
def test_openenv_client_wins_a_game(played: dict[str, dict], scenario: str, solution: Solution) -> None:
    wrong, answer = solution
    record = played[scenario]
    _no_error(record)
    assert "Wordle" in record["prompt"] and record["reset_done"] is False
    assert set(record["tools"]) == {"guess", "get_history"}
    first, history, last = record["steps"]
    assert first["text"].startswith(f"{wrong.upper()} ") and "5 guesses left" in first["text"]
    assert (first["is_error"], first["done"], first["reward"] or 0.0) == (False, False, 0.0)
    assert f"1. {wrong.upper()}" in history["text"] and not history["done"]
    assert last["text"].startswith(f"{answer.upper()} 🟩🟩🟩🟩🟩") and "Correct" in last["text"]
    assert last["done"] is True and last["reward"] == pytest.approx(_win_reward(2))
    if scenario.startswith("typed"):
        assert first["observation_type"] == last["observation_type"] == "CallToolObservation"
    state = record["state"]
    assert isinstance(state["episode_id"], str) and state["episode_id"]
    assert state["step_count"] == 3
    assert state["guesses"] == [wrong, answer]


def test_openenv_client_sees_validation_errors(played: dict[str, dict]) -> None:
    record = played["validation"]
    _no_error(record)
    for key in ("missing_tool_name", "unknown_action_type", "arguments_not_object"):
        assert record[key] and "(code: VALIDATION_ERROR)" in record[key], (key, record[key])
    for key in ("wrong_argument_type", "unknown_tool"):  # tool-level mistakes: error observations
        assert record[key]["is_error"] is True and record[key]["done"] is False, record[key]
    assert "teleport" in record["unknown_tool"]["text"]
    after = record["after"]  # the session survived every bad message; no attempt was used up
    assert after["done"] is True and after["reward"] == pytest.approx(_win_reward(1))


@pytest.mark.parametrize("kind", SERVERS)
def test_openenv_client_refused_at_capacity(kind: str, openenv_python: Path, solution: Solution) -> None:
    with _server(kind, 1, openenv_python) as url:
        record = _run_client(openenv_python, url, solution, "capacity")["capacity"]
    _no_error(record)
    assert record["second_refused"] and "(code: CAPACITY_REACHED)" in record["second_refused"]
    assert record["first_still_plays"]["done"] is True
    assert record["third_after_close"] is None  # the slot came back when the first client closed


def test_openenv_mcp_tool_client(played: dict[str, dict], solution: Solution) -> None:
    """0.10.0's MCPToolClient needs OpenEnv's JSON-RPC sessions on ``POST /mcp`` next to ``/ws``."""
    wrong, answer = solution
    record = played["mcp-tool-client"]
    _no_error(record)
    assert set(record["tools"]) == {"guess", "get_history"} and record["reset_done"] is False
    assert record["first"].startswith(f"{wrong.upper()} ")
    assert f"1. {wrong.upper()}" in record["history"]["text"]
    assert record["last"].startswith(f"{answer.upper()} 🟩🟩🟩🟩🟩")
    assert record["state"]["episode_id"]
    assert set(record["fresh_tools"]) == {"guess", "get_history"}  # list_tools(use_cache=False) asks again
    assert record["guess_schema"]["properties"]["word"]["type"] == "string"  # get_tool
    assert record["missing_tool"] is None and record["has"] == [True, False]  # get_tool, has_tool


def test_openenv_mcp_tool_client_in_sync_code(played: dict[str, dict], solution: Solution) -> None:
    """``MCPToolClient(...).sync()``: list_tools, has_tool and call_tool through SyncEnvClient's delegation."""
    wrong, answer = solution
    record = played["mcp-tool-client-sync"]
    _no_error(record)
    assert record["reset_done"] is False and set(record["tools"]) == {"guess", "get_history"}
    assert record["has"] == [True, False]
    assert record["first"].startswith(f"{wrong.upper()} ")
    assert record["last"].startswith(f"{answer.upper()} 🟩🟩🟩🟩🟩")
    assert record["state"]["episode_id"]  # (OpenEnv's own server does not count /mcp calls as steps; we do)


def _sessions_apart(record: dict, wrong: str, answer: str) -> None:
    """``new_session``: a child plays its own episode beside its parent's, on its own socket."""
    assert record["parent_win"]["done"] is True and record["parent_win"]["reward"] == pytest.approx(_win_reward(1))
    parent, child = record["parent_state"], record["child_state"]
    assert parent["guesses"] == [answer] and child["guesses"] == [wrong]
    assert parent["episode_id"] != child["episode_id"]


@pytest.mark.parametrize("scenario", ["lifecycle-sync", "lifecycle-async"])
def test_openenv_client_lifecycle(played: dict[str, dict], scenario: str, solution: Solution) -> None:
    """The rest of the client's public surface: ``base_url``, ``connect``/``disconnect`` (a new socket is a
    new session), ``new_session``, ``close``; sync: EnvClient's own ``with``, ``GenericAction``, ``async_client``."""
    wrong, answer = solution
    record = played[scenario]
    _no_error(record)
    assert record["base_url"].startswith("http://127.0.0.1:")
    _sessions_apart(record, wrong, answer)
    if scenario == "lifecycle-sync":
        assert record["first"]["text"].startswith(f"{wrong.upper()} ")  # a GenericAction is a plain action
        assert record["before"]["guesses"] == [wrong]
        win = record["reconnected"]  # the new session's episode never saw the wrong guess
        assert win["done"] is True and win["reward"] == pytest.approx(_win_reward(1))
        assert record["after"]["guesses"] == [answer]
        assert record["after"]["episode_id"] != record["before"]["episode_id"]
        assert record["async_client"] == "GenericEnvClient"
    else:
        assert record["after_reconnect"]["step_count"] == 0
        assert record["after_reconnect"]["episode_id"] not in (
            record["parent_state"]["episode_id"],
            record["child_state"]["episode_id"],
        )


def test_a_crash_reaches_openenv_clients_as_a_void_step(openenv_python: Path, solution: Solution) -> None:
    """A step our server could not run is OpenEnv's void step, never "reward 0 and done": reward null,
    done, the failure in metadata (where OpenEnv's clients keep extras), and no step after it."""
    from omnienv.app import create_app
    from omnienv.server import running
    from tests.matrix.cells import CRASH, MatrixWordle

    with running(create_app(MatrixWordle)) as url:
        record = _run_client(openenv_python, url, (CRASH, solution[1]), "crash")["crash"]
    _no_error(record)
    generic, typed = record["generic"], record["typed"]
    assert generic["reward"] is None and generic["done"] is True
    assert "the sandbox died" in generic["observation_metadata"]["failure"]["message"]
    assert generic["metadata"] == generic["observation_metadata"]  # StepResult.metadata too
    assert generic["error"]["error_type"] == "execution_error"
    assert record["after"] and "(code: EPISODE_OVER)" in record["after"]
    assert typed["observation_type"] == "CallToolObservation" and typed["error_type"] == "execution_error"
    assert typed["reward"] is None and typed["done"] is True and typed["metadata"]["failure"]


def test_openenv_validate_url_passes(played: dict[str, dict]) -> None:
    """``openenv validate --url``: OpenEnv's own runtime probe of a live server (routes, shapes, mode)."""
    run = played["openenv-validate"]
    assert run["stdout"].strip(), run["stderr"]
    report = json.loads(run["stdout"])
    failed = {c["id"]: c["actual"] for c in report["criteria"] if not c["passed"]}
    assert not failed and report["passed"] is True, failed
    assert report["standard_profile"].startswith("openenv-http/1")


def test_benchmark_drives_every_server_with_the_same_frames(openenv_python: Path, tmp_path: Path) -> None:
    """benchmarks/ws_throughput.py, briefly: every server answers the same words with no error frame.

    Only counts are checked (never timings): this keeps the benchmark and the OpenEnv Wordle it
    measures against from rotting.
    """
    out = tmp_path / "results.json"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "ws_throughput.py"),
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--levels",
            "1,2",
            "--no-pin",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads(out.read_text())["results"]
    seen = {(r["server"], r["sessions"]) for r in results}
    servers = ("omnienv", "omnienv-echo", "openenv-mcp", "openenv-plain", "echo")
    assert seen == {(s, n) for s in servers for n in (1, 2)}, run.stdout
    for r in results:
        assert r["steps"] > 0 and r["errors"] == 0, r
