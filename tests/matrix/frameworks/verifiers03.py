"""Verifiers 0.3 (the classic ``load_environment`` / ``StatefulToolEnv`` / ``Rubric``, in its
virtualenv) against scripted models, with the same endpoints as Verifiers 0.4's cells
(:mod:`tests.matrix.frameworks.verifiers`); ``tests/matrix/drivers/verifiers03.py`` runs
``Environment.evaluate`` on all four environments in one process."""

from __future__ import annotations

from typing import Any

from tests.matrix.frameworks.verifiers import collect_with


def collect() -> dict[str, dict[str, Any]]:
    return collect_with("verifiers03", "verifiers03.py", timeout=600)
