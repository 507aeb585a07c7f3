"""``--no-skips``: under ``make test`` a skipped test fails, naming why it would have skipped.

A few tests skip where a machine lacks what they need (Xvfb, Chromium, bubblewrap, a writable
cgroup), so that a quick run on a bare machine says what is missing. ``make test`` runs on a
machine it prepared itself (it installs those packages), where each of them must run: there a
skip would be a test that can no longer fail, so it is reported as a failure instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

OPTION = "--no-skips"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, action="store_true", help="report every skipped test, or module, as a failure")


def _fail(report: Any, config: pytest.Config) -> None:
    if not (report.skipped and config.getoption(OPTION)):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    report.outcome = "failed"
    report.longrepr = f"skipped under {OPTION} (make test runs every test): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    _fail(outcome.get_result(), item.config)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    _fail(outcome.get_result(), collector.config)
