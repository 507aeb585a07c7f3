"""The matrix's results, printed as one table at the end of the run."""

from __future__ import annotations

from typing import Any

from tests.matrix.cells import ENVS

RESULTS: dict[tuple[str, str], str] = {}
"""``(framework, env) -> "ok"`` or what failed, filled in by the cells as they run."""


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not RESULTS:
        return
    frameworks = list(dict.fromkeys(framework for framework, _ in RESULTS))
    width = max(len(framework) for framework in frameworks)
    columns = [max(30, len(env)) for env in ENVS]
    terminalreporter.section("every reference environment in every framework")
    header = "  ".join(env.ljust(c) for env, c in zip(ENVS, columns, strict=True))
    terminalreporter.write_line(" " * width + "  " + header)
    for framework in frameworks:
        row = [RESULTS.get((framework, env), "not run")[:c].ljust(c) for env, c in zip(ENVS, columns, strict=True)]
        terminalreporter.write_line(framework.ljust(width) + "  " + "  ".join(row))
    passed = sum(result == "ok" for result in RESULTS.values())
    terminalreporter.write_line(f"{passed} of {len(RESULTS)} cells ok")
