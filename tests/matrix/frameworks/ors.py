"""ORS: openreward's own client (its virtualenv) against our server, one app per environment."""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

import pytest

from omnienv.app import create_app
from omnienv.server import running
from tests.matrix.cells import CELLS
from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind, run_json


def collect() -> dict[str, dict[str, Any]]:
    python = peer_python("openreward")
    with ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        urls = {env: stack.enter_context(running(create_app(cell.env_class))) for env, cell in CELLS.items()}
        patch.setenv("OMNIENV_URLS", json.dumps(urls))
        lines = run_json(python, ROOT / "tests" / "matrix" / "drivers" / "ors.py", timeout=300)
    return {report["env"]: report for report in by_kind(lines, "cell")}
