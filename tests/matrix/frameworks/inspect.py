"""Inspect AI (its own virtualenv): each cell as an Inspect task run by Inspect's ``eval()``.

The model is the cell's scripted player behind a real OpenAI-compatible endpoint started here
(:func:`tests.matrix.model.scripted_model`), one for the episode and one that crashes, so Inspect's
own provider and tool loop make every request; what the model was sent is read from the endpoint's
log.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

import pytest

from tests.matrix.cells import CELLS, cell_report
from tests.matrix.model import ModelLog, model_view, scripted_model
from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind, run_json

DRIVER = ROOT / "tests" / "matrix" / "drivers" / "inspect.py"
TIMEOUT_S = 420.0


def collect() -> dict[str, dict[str, Any]]:
    python = peer_python("inspect")
    with ExitStack() as stack:
        services: dict[str, str] = {}
        logs: dict[str, ModelLog] = {}
        for env in CELLS:
            for crash in (False, True):
                service = f"{env}crash" if crash else env
                services[service], logs[service] = stack.enter_context(scripted_model(env, crash=crash))
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MATRIX_INSPECT_MODELS", json.dumps(services))
            patch.setenv("PYTHONPATH", str(ROOT))
            lines = by_kind(run_json(python, DRIVER, timeout=TIMEOUT_S), "inspect")
    reports = {}
    for line in lines:
        env = line["env"]
        seen, texts, images = model_view(logs[env])
        crash_seen, crash_texts, crash_images = model_view(logs[f"{env}crash"])
        reports[env] = cell_report(
            env,
            rewards=None,
            total=line["total"],
            done=line["done"],
            crash=line["crash"],
            seen=[*line["seen"], *seen, *crash_seen],
            texts=[*texts, *crash_texts],
            images=[*images, *crash_images],
            notes=line["notes"],
        )
    return reports
