"""A server that runs the agent's code says, at start-up, which sandbox limit the machine cannot enforce."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHECK = "from omnienv.envs.{module}.env import {cls}; {cls}.preflight(); print('ready')"


@pytest.mark.parametrize(("module", "cls"), [("jupyter", "Jupyter"), ("desktop", "Desktop")])
def test_preflight_passes_here_and_warns_loudly_without_cgroups(module: str, cls: str) -> None:
    code = CHECK.format(module=module, cls=cls)
    here = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert here.returncode == 0 and here.stdout.strip() == "ready", here.stderr
    assert "NOT enforced" not in here.stderr  # this machine gives every limit

    env = {**os.environ, "OMNIENV_SANDBOX_CGROUPS": "0"}
    without = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert without.returncode == 0, without.stderr
    assert "sandbox limits NOT enforced per sandbox for cpu, memory, pids" in without.stderr
    assert "docs/security.md" in without.stderr


def test_a_machine_without_bubblewrap_refuses_to_serve_code(tmp_path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on PATH
    code = CHECK.format(module="jupyter", cls="Jupyter")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode != 0
    assert "SandboxUnavailableError" in result.stderr and "bubblewrap" in result.stderr
