"""How ``make test`` shares the suite between its two pytest-xdist workers.

Most of the suite waits (on servers, kernels, displays, peers' virtualenvs being built), so two
workers finish it in far less time than one on a 2-core machine. Tests go to a worker a module at
a time, so module fixtures are made once; a module without fixtures of its own goes a test at a
time (the matrix's cells), and a package whose fixtures outlive its modules goes whole to one
worker: one Ray instance for tests/ray, one browser for tests/ui. The longest go first, so that no
worker is left with a long one at the end while the other waits.

tests/deploy goes last, and always to the first worker: that worker starts making its Docker
daemon and images when it collects the suite (tests/deploy/conftest.py), so they are ready by then.
"""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest_plugins = ["tests.strict_skips"]  # make test's --no-skips

PACKAGES_ON_ONE_WORKER = ("tests/ray/", "tests/ui/", "tests/deploy/")
ONE_TEST_AT_A_TIME = ("tests/matrix/test_matrix.py", "tests/peers/test_verifiers.py", "tests/test_benchmarks.py")
"""Modules whose tests share no fixture of the module's: each test can go to either worker."""
LONGEST_FIRST = (
    "tests/envs/test_jupyter.py",
    "tests/envs/test_jupyter_tasks.py",
    "tests/security/test_jupyter_answers.py",
    "tests/security/test_jupyter_leaks.py",
    "tests/envs/test_terminal_tasks.py",
    "tests/peers/test_trl_learning.py",
    "tests/matrix/",
    "tests/peers/test_verifiers.py",
    "tests/peers/test_trl_async.py",
)
"""Where the run's time goes, longest first (``--durations`` of a whole run); those that need no
peer's virtualenv first, while tests/peerenv.py builds them (in the order of FIRST_NEEDED)."""
LAST = "tests/deploy/"
IMAGE_WORKER = "gw0"
"""The worker that makes the images and runs tests/deploy."""


def pytest_sessionstart(session: pytest.Session) -> None:
    """Take down what killed runs left of their sandboxes (tests/leftovers.py), once a run: in the
    controller of a pytest-xdist run, or in the only process of a plain one."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    from tests.leftovers import sweep_test_sandboxes

    sweep_test_sandboxes()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # each worker collects all; the scheduler hands them out in this order
        rank = {prefix: index for index, prefix in enumerate(LONGEST_FIRST)}

        def place(item: pytest.Item) -> int:
            if item.nodeid.startswith(LAST):
                return len(rank) + 1
            return next((rank[p] for p in LONGEST_FIRST if item.nodeid.startswith(p)), len(rank))

        items.sort(key=place)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for package in PACKAGES_ON_ONE_WORKER:
                if nodeid.startswith(package):
                    return package
            module = nodeid.split("::", 1)[0]
            return nodeid if module in ONE_TEST_AT_A_TIME else module

        def _takes(self, node: Any, scope: str) -> bool:
            return scope != LAST or node.gateway.id == IMAGE_WORKER

        def _assign_work_unit(self, node: Any) -> None:
            scope = next((scope for scope in self.workqueue if self._takes(node, scope)), None)
            if scope is None:
                return
            work_unit = self.workqueue.pop(scope)
            self.assigned_work.setdefault(node, {})[scope] = work_unit
            collection = self.registered_collections[node]
            node.send_runtest_some([collection.index(nodeid) for nodeid, done in work_unit.items() if not done])

        def _reschedule(self, node: Any) -> None:
            if node.shutting_down:
                return
            pending = self._pending_of(self.assigned_work.get(node, {}))
            if not any(self._takes(node, scope) for scope in self.workqueue):
                if not pending:  # nothing left that this worker may take
                    node.shutdown()
                return
            if pending <= 2:
                self._assign_work_unit(node)

    return ByModule(config, log)


# -- the matrix's table (tests/matrix), printed at the end of the run by the process that reports it

MATRIX: dict[tuple[str, str], str] = {}
"""``(framework, env) -> "ok"`` or what failed, from each cell's ``matrix`` property."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == "matrix":
            framework, env, outcome = value
            MATRIX[framework, env] = outcome


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not MATRIX:
        return
    from tests.matrix.cells import ENVS

    frameworks = list(dict.fromkeys(framework for framework, _ in MATRIX))
    width = max(len(framework) for framework in frameworks)
    columns = [max(30, len(env)) for env in ENVS]
    terminalreporter.section("every reference environment in every framework")
    header = "  ".join(env.ljust(c) for env, c in zip(ENVS, columns, strict=True))
    terminalreporter.write_line(" " * width + "  " + header)
    for framework in frameworks:
        row = [MATRIX.get((framework, env), "not run")[:c].ljust(c) for env, c in zip(ENVS, columns, strict=True)]
        terminalreporter.write_line(framework.ljust(width) + "  " + "  ".join(row))
    passed = sum(outcome == "ok" for outcome in MATRIX.values())
    terminalreporter.write_line(f"{passed} of {len(MATRIX)} cells ok")


@pytest.fixture
def low_file_limit() -> Iterator[int]:
    """A soft open-file limit of 256, as some systems start a process with; yields the hard
    limit, and restores both after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    try:
        yield hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture(autouse=True)
def _fresh_cli_consoles() -> None:
    """The CLI makes its rich consoles once a process, as wide as ``COLUMNS`` says then; the suite
    runs many commands in one process, each with a ``COLUMNS`` of its own, so none starts made."""
    common = sys.modules.get("omnienv.cli.common")
    if common is not None:
        common.console._console = None
        common.errors._console = None
