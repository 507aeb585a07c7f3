"""GEM (gem-llm, in its own virtualenv): ``gem.make`` on each matrix environment, run by the driver."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.peerenv import ROOT, peer_python


def run_driver(peer: str, module: str, timeout: float = 300) -> dict[str, dict[str, Any]]:
    """Each environment's report, as driver ``module`` printed it in ``peer``'s virtualenv.

    The driver runs as a module (``-m``): run as a script, its own folder would come first on
    ``sys.path``, and a driver named after its framework (``gem``) would shadow the package.
    """
    python = peer_python(peer)
    result = subprocess.run([str(python), "-m", module], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert result.returncode == 0, f"{module} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {report["env"]: report for report in reports if report.get("kind") == "cell"}


def collect() -> dict[str, dict[str, Any]]:
    return run_driver("gem", "tests.matrix.drivers.gem")
