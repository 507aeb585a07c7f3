"""TRL (its own virtualenv): each cell through a real ``GRPOTrainer`` step on omnienv's ``environment_factory``.

TRL reports only an episode's reward (``get_reward``), so the reports carry no per-step rewards;
a crashed episode's ``get_reward`` is None, which TRL turns into NaN and leaves out of the
advantages. See ``tests/matrix/drivers/trl.py`` for what runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.matrix.cells import CELLS
from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind, run_json

DRIVER = ROOT / "tests" / "matrix" / "drivers" / "trl.py"
TIMEOUT_S = 480.0


def collect() -> dict[str, dict[str, Any]]:
    python = peer_python("trl")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(ROOT))
        patch.setenv("OMP_NUM_THREADS", "1")
        patch.setenv("TOKENIZERS_PARALLELISM", "false")
        patch.setenv("HF_HUB_OFFLINE", "1")
        reports = by_kind(run_json(python, DRIVER, timeout=TIMEOUT_S), "cell")
    found = {report["env"]: report for report in reports}
    assert set(found) == set(CELLS), f"the TRL driver reported {sorted(found)}"
    return found
