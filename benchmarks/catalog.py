"""Sweep the catalog: load every environment, reset it, take one step, run the contract checks.

Each source runs in the interpreter that has its library: this one when it imports here, else
the source's test virtualenv (``.venvs/reasoning_gym``, ``.venvs/gem``, ``.venvs/textarena``) when
it exists; a source with neither is skipped and the table says why. A worker prints one JSON line
per environment; this process gathers them into one table (how many load, pass the checks and
play, the slowest), then lists every failure with its reason.

The step is one random call that fits the first tool's schema (as the checker's are): "play"
means the environment took it without an infrastructure failure, not that it was a good move.
Checks are skipped (and said so) for environments whose reset alone takes longer than
``--check-budget`` seconds, since the checker resets a dozen times. A source's first environment
pays for importing its library in its load time.

    python benchmarks/catalog.py [--source gem] [--limit 10] [--check-budget 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
VENVS = {
    "reasoning-gym": ROOT / ".venvs" / "reasoning_gym",
    "gem": ROOT / ".venvs" / "gem",
    "textarena": ROOT / ".venvs" / "textarena",
}
console = Console() if sys.stdout.isatty() else Console(width=160)


def sweep_one(name: str, check_budget: float) -> dict[str, Any]:
    """Load, reset, one step and (when the reset is quick) the checks, each timed."""
    from omnienv.core import ToolCall, check_env, load_environment
    from omnienv.core.sampling import sample_arguments

    row: dict[str, Any] = {"name": name, "loaded": False, "played": False, "checked": None, "errors": []}
    start = time.perf_counter()
    try:
        cls = load_environment(name)
        row["loaded"], row["load_s"] = True, time.perf_counter() - start
        env = cls()
        start = time.perf_counter()
        env.reset(seed=0)
        row["reset_s"] = time.perf_counter() - start
        spec = next(iter(cls.tools.values()))
        arguments = sample_arguments(spec.parameters, random.Random(0), cls.random_strings())
        start = time.perf_counter()
        result = env.step(ToolCall(spec.name, arguments))
        row["step_s"] = time.perf_counter() - start
        row["played"] = result.failure is None
        if result.failure is not None:
            row["errors"].append(f"step {spec.name}({arguments}): {result.failure.message}")
        env.close()
    except Exception as exc:
        row["errors"].append(f"{'reset' if row['loaded'] else 'load'}: {type(exc).__name__}: {exc}")
        return row
    if row["reset_s"] > check_budget:
        row["errors"].append(f"checks skipped: reset took {row['reset_s']:.1f} s (> --check-budget)")
        return row
    start = time.perf_counter()
    report = check_env(cls)
    row["check_s"], row["checked"] = time.perf_counter() - start, report.ok
    row["errors"] += [f"check {r.name}: {r.message}" for r in report.failures]
    return row


def worker(source: str, limit: int | None, check_budget: float) -> None:
    """Sweep one source in this interpreter, one JSON line per environment."""
    import logging

    from omnienv.catalog import entries

    logging.getLogger("omnienv").setLevel(logging.CRITICAL)  # failures are reported in the rows
    results, sys.stdout = sys.stdout, sys.stderr  # what the libraries print must not mix with the rows
    for entry in entries(source)[:limit]:
        print(json.dumps({"source": source, **sweep_one(entry.name, check_budget)}), file=results, flush=True)


def interpreter(source: str) -> tuple[str | None, str]:
    """The Python to sweep ``source`` with, and where it came from (or why there is none)."""
    from omnienv.catalog import SOURCES

    if importlib.util.find_spec(SOURCES[source].module) is not None:
        return sys.executable, "this interpreter"
    venv = VENVS.get(source)
    if venv is not None and (venv / "bin" / "python").exists():
        return str(venv / "bin" / "python"), str(venv.relative_to(ROOT))
    return None, f"{SOURCES[source].library} is not installed here and {venv or 'no test virtualenv'} does not exist"


def run_source(source: str, python: str, limit: int | None, check_budget: float) -> list[dict[str, Any]]:
    """Sweep ``source`` in a worker on ``python``; a worker that dies is one failed row."""
    command = [python, __file__, "--worker", source, "--check-budget", str(check_budget)]
    command += ["--limit", str(limit)] if limit else []
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    from omnienv.catalog import entries

    seen = {row["name"] for row in rows}
    why = f"the worker exited {done.returncode} before reaching it: {done.stderr[-300:]}"
    for entry in entries(source)[:limit]:
        if entry.name not in seen:
            rows.append({"source": source, "name": entry.name, "loaded": False, "errors": [why]})
    return rows


def report(rows: list[dict[str, Any]]) -> None:
    """The slowest environments, then every failure with its reason."""
    phases = ("load_s", "reset_s", "step_s", "check_s")
    timed = sorted(rows, key=lambda row: -sum(row.get(k, 0.0) for k in phases))
    slowest = Table("environment", "load s", "reset s", "step s", "checks s", title="slowest 10")
    for row in timed[:10]:
        slowest.add_row(row["name"], *(f"{row[k]:.3f}" if k in row else "-" for k in phases))
    console.print(slowest)
    failures = [row for row in rows if row["errors"]]
    table = Table("environment", "reason", title=f"{len(failures)} environments with a failure or a skipped check")
    for row in failures:
        table.add_row(row["name"], "\n".join(error[:300] for error in row["errors"]))
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", action="append", help="only this source (repeatable)")
    parser.add_argument("--limit", type=int, default=None, help="at most this many environments per source")
    parser.add_argument("--check-budget", type=float, default=1.0, help="skip checks when a reset takes longer")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.limit, args.check_budget)
        return
    from omnienv.catalog import SOURCES

    rows: list[dict[str, Any]] = []
    summary = Table("source", "ran in", "environments", "load", "pass checks", "play", "seconds", title="catalog sweep")
    for source in args.source or list(SOURCES):
        python, where = interpreter(source)
        if python is None:
            summary.add_row(source, f"[yellow]skipped: {where}[/]", "", "", "", "", "")
            continue
        start = time.perf_counter()
        got = run_source(source, python, args.limit, args.check_budget)
        counts = [str(sum(1 for row in got if row.get(key))) for key in ("loaded", "checked", "played")]
        summary.add_row(source, where, str(len(got)), *counts, f"{time.perf_counter() - start:.1f}")
        rows += got
    console.print(summary)
    report(rows)


if __name__ == "__main__":
    main()
