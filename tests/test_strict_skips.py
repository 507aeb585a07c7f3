"""``make test`` passes ``--no-skips``: a test that would skip fails there, naming why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.peerenv import ROOT

SKIPPING = """
import pytest

missing = pytest.mark.skipif(True, reason="no Xvfb: make system-deps installs it")


@missing
def test_marked():
    pass


def test_called():
    pytest.skip("no Chromium")


def test_runs():
    pass
"""


def run(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "tests.strict_skips", "-q", "-p", "no:cacheprovider", *options]
    return subprocess.run(
        [*command, "--rootdir", str(folder), str(folder)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def test_a_skip_fails_under_no_skips_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    plain = run(tmp_path)
    assert plain.returncode == 0 and "1 passed, 2 skipped" in plain.stdout, plain.stdout
    strict = run(tmp_path, "--no-skips")
    assert strict.returncode == 1 and "1 failed, 1 passed, 1 error" in strict.stdout, strict.stdout
    why = "skipped under --no-skips (make test runs every test): no Xvfb: make system-deps installs it"
    assert why in strict.stdout and "no Chromium" in strict.stdout, strict.stdout


def test_a_module_that_skips_whole_stops_the_run_under_no_skips(tmp_path: Path) -> None:
    (tmp_path / "test_whole_module.py").write_text("import pytest\npytest.importorskip('no_such_package_here')\n")
    assert run(tmp_path).returncode == 5  # nothing ran: every test was skipped
    strict = run(tmp_path, "--no-skips")
    assert strict.returncode == 2 and "error collecting" in strict.stdout.lower(), strict.stdout
    assert "skipped under --no-skips" in strict.stdout and "no_such_package_here" in strict.stdout, strict.stdout


def test_make_test_runs_with_no_skips() -> None:
    assert "--no-skips" in (ROOT / "Makefile").read_text().split("\ntest:", 1)[1].split("\n\n", 1)[0]
