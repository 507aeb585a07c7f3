"""The benchmarks run, briefly, and print their targets and verdicts in one table.

Nothing here looks at a time or a ratio: a benchmark reports, it never fails a build. What is
checked is what a benchmark claims besides speed (no session reached the wrong worker, no process
outlived its session, the server and the client ran on CPUs of their own) and that it still runs
at all. Not here: ``ws_throughput.py`` runs in
tests/peers/test_openenv.py, beside the OpenEnv servers it needs; ``sessions.py`` needs OpenEnv's
virtualenv too and ``ray_overhead.py`` a Ray instance of its own (tests/ray hold theirs), and the
code they drive is what tests/server and tests/ray check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def bench(script: str, *args: str, timeout: float = 300) -> str:
    """Run ``benchmarks/<script>`` with ``args``; its output, once it exited with 0."""
    env = {**os.environ, "COLUMNS": "240"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


def row(output: str, measure: str) -> list[str]:
    """The cells of the table row whose first cell starts with ``measure``."""
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip("│ ").split("│")]
        if cells and cells[0].startswith(measure):
            return cells
    raise AssertionError(f"no row '{measure}' in:\n{output}")


def test_inprocess_puts_the_target_and_verdict_on_the_tool_methods_row() -> None:
    output = bench("inprocess.py", "--games", "10", "--repeats", "1")
    cells = row(output, "tool method")
    assert cells[-2] == "<= 1.3x" and cells[-1] in ("met", "missed"), cells


def test_ui_startup_judges_the_ratio_of_start_ups() -> None:
    cells = row(bench("ui_startup.py", "--runs", "1"), "start-up on / off")
    assert cells[-2] == "<= 1.10x" and cells[-1] in ("met", "missed"), cells


def test_capture_judges_the_proxys_added_latency() -> None:
    output = bench("capture.py", "--calls", "10", "--episodes", "1", "--turns", "2", "--model-ms", "1")
    assert row(output, "added per whole call")[-2] == "<= 1 ms"


def test_workers_sees_no_session_reach_the_wrong_worker(tmp_path: Path) -> None:
    rows = tmp_path / "rows.json"
    output = bench("workers.py", "--workers", "1,2", "--duration", "0.5", "--warmup", "0.2", "--json", str(rows))
    levels = json.loads(rows.read_text())
    assert {(level["transport"], level["workers"]) for level in levels} == {
        (transport, workers) for transport in ("ws", "ws-attach", "http") for workers in (1, 2)
    }, output
    for level in levels:
        assert level["replies"] > 0 and level["misrouted"] == 0 and level["errors"] == 0, level
    assert all(level["forwarded"] > 0 for level in levels if level["workers"] == 2 and level["transport"] != "ws")


def test_ws_throughput_runs_its_servers_and_its_client_on_different_cpus() -> None:
    """The client pins itself first; the servers it then starts must still get a CPU of their own,
    or the two share one and take turns, and every ratio measures the sharing."""
    probe = (
        "import json, os\n"
        "from benchmarks import ws_throughput as wt\n"
        "from benchmarks._harness import pin_self\n"
        "machine = sorted(os.sched_getaffinity(0))\n"
        "pin_self(wt.CLIENT_CPU)\n"
        "with wt.benchmark_server('echo', 4, wt.SERVER_CPU) as server:\n"
        "    print(json.dumps([machine, sorted(os.sched_getaffinity(server.pid)), sorted(os.sched_getaffinity(0))]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-4000:]
    machine, server, client = json.loads(done.stdout)
    if len(machine) >= 2:
        assert len(server) == len(client) == 1 and server != client, done.stdout
    else:
        assert server == client == machine, done.stdout


@pytest.mark.parametrize("script", ["jupyter.py", "desktop.py", "terminal.py"])
def test_a_sandboxed_benchmark_leaves_no_process_behind(script: str) -> None:
    pool = ["--refill", "2"] if script != "terminal.py" else []  # a terminal's shells need no pool
    output = bench(script, "--quick", "--duration", "1", "--warmup", "0.3", "--check", "0.5", *pool)
    cells = row(output, "processes left running after close")
    assert cells[1].startswith("0 of ") and cells[-1] == "meets", cells
    row(output, "most concurrent sessions without a failure")  # how many depends on the machine's load
    if script == "terminal.py":
        assert row(output, "sandbox folders left after close")[1:] == ["0", "0", "meets"], output
