"""Every reference environment through every framework's own package: 4 x 11 cells.

Each framework module in :mod:`tests.matrix.frameworks` plays all four cells (:mod:`tests.matrix.cells`)
with the framework's own package, in that framework's virtualenv where it has one, and returns a
report per environment. Every report is held to the same episode on the bare environment: the same
rewards step by step (or the same episode reward, where the framework reports only that), the
framework's own end signal, a crash that the framework masks its own way and never scores 0, no
answer in anything the agent was shown (for the terminal, a string only its verifier holds), and,
for the desktop, screenshots that reach the model as images, never as base64 text. A table of the
cells is printed at the end of the run.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from tests.matrix.cells import CELLS, ENVS
from tests.matrix.reference import reference

FRAMEWORKS = (
    "openenv",
    "mcp",
    "ors",
    "nemo_gym",
    "verifiers",
    "verifiers03",
    "skyrl",
    "gem",
    "gymnasium",
    "trl",
    "inspect",
)

NATIVE_MASKS = {"nemo_gym": "mask_sample"}
"""Frameworks whose schema demands a reward number even for a void episode, and the field of
their own that tells their trainers to leave it out; every other framework gets no reward."""

_COLLECTED: dict[str, dict[str, dict[str, Any]] | Exception] = {}


def reports(framework: str) -> dict[str, dict[str, Any]]:
    """The framework's reports by environment, collected once for all four cells (a collection
    that raised raises again in each cell, without running twice)."""
    if framework not in _COLLECTED:
        module = importlib.import_module(f"tests.matrix.frameworks.{framework}")
        try:
            _COLLECTED[framework] = module.collect()
        except Exception as exc:
            _COLLECTED[framework] = exc
    found = _COLLECTED[framework]
    if isinstance(found, Exception):
        raise found
    return found


def check(framework: str, env: str) -> None:
    cell, expected, report = CELLS[env], reference(env), reports(framework).get(env)
    assert report is not None, f"{framework} reported nothing for {env}"
    if report["rewards"] is not None:
        assert report["rewards"] == pytest.approx(list(expected.rewards)), "rewards step by step"
    assert report["total"] == pytest.approx(expected.total), f"the episode's reward ({report.get('notes')})"
    assert report["done"] is expected.done, "the end signal"
    crash = report["crash"]
    assert crash["masked"], f"the crash is not masked: {crash}"
    reward = crash["reward"]
    if reward is not None and reward != "nan":  # a number: only a framework's own masking field voids it
        assert crash["signal"] == NATIVE_MASKS.get(framework), f"the crash was scored {reward!r}"
    seen = report["seen"].lower()
    assert cell.prompt_fragment.lower() in seen, "the driver did not report what the agent was shown"
    assert cell.secret.lower() not in seen, f"the answer {cell.secret!r} reached the agent"
    assert not report["base64_in_text"], "an image reached the model as base64 text"
    if cell.images:
        screens = [image for image in report["images"] if image["size"] == [1024, 768]]
        assert screens, f"no 1024x768 screenshot reached the model as an image: {report['images']}"


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_cell(framework: str, env: str, record_property: Any) -> None:
    """Its outcome goes into its report as the property ``matrix``: the process that reports the
    run prints the table (tests/conftest.py), under pytest-xdist too, where cells run in a worker."""
    try:
        check(framework, env)
    except AssertionError as exc:
        record_property("matrix", (framework, env, "FAIL " + str(exc).split("\n")[0]))
        raise
    except Exception as exc:
        record_property("matrix", (framework, env, f"ERROR {type(exc).__name__}"))
        raise
    record_property("matrix", (framework, env, "ok"))
