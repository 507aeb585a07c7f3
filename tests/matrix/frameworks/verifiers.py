"""Verifiers 0.4 (its own ``verifiers.v1`` eval runner, in its virtualenv) against scripted models.

verifiers owns the model loop, so each cell's model is the scripted player behind a real
OpenAI-compatible endpoint here (:func:`tests.matrix.model.scripted_model`), one for the episode
and one for the crash per environment; ``tests/matrix/drivers/verifiers.py`` runs all of them in
one process of the peer's virtualenv. What the model was sent comes from the endpoints' logs.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

import pytest

from tests.matrix.cells import _BASE64_RUN, ENVS
from tests.matrix.model import ModelLog, model_view, scripted_model
from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind, run_json


def with_model_view(report: dict[str, Any], *logs: ModelLog) -> dict[str, Any]:
    """The driver's report, completed with what the models were actually sent."""
    seen, texts, images = model_view(ModelLog([request for log in logs for request in log.requests]))
    return {
        **report,
        "seen": json.dumps([*json.loads(report["seen"]), *seen], default=repr),
        "base64_in_text": report["base64_in_text"] or any(_BASE64_RUN.search(text) for text in texts),
        "images": [*report["images"], *images],
    }


def collect_with(peer: str, driver: str, timeout: float) -> dict[str, dict[str, Any]]:
    """Serve every cell's two scripted models, run ``driver`` in ``peer``'s virtualenv, merge."""
    python = peer_python(peer)
    with ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        logs: dict[str, tuple[ModelLog, ModelLog]] = {}
        for env in ENVS:
            url, log = stack.enter_context(scripted_model(env))
            crash_url, crash_log = stack.enter_context(scripted_model(env, crash=True))
            logs[env] = log, crash_log
            patch.setenv(f"MATRIX_MODEL_{env.upper()}", url)
            patch.setenv(f"MATRIX_CRASH_{env.upper()}", crash_url)
        lines = run_json(python, ROOT / "tests" / "matrix" / "drivers" / driver, timeout=timeout)
        return {report["env"]: with_model_view(report, *logs[report["env"]]) for report in by_kind(lines, "cell")}


def collect() -> dict[str, dict[str, Any]]:
    return collect_with("verifiers", "verifiers.py", timeout=600)
