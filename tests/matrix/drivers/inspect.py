"""Run in Inspect AI's virtualenv: each matrix cell as an Inspect task, through Inspect's own ``eval()``.

The solver is omnienv's Inspect dialect, whose turn is Inspect's own tool loop; the model is the
cell's scripted player behind an OpenAI-compatible endpoint (``MATRIX_INSPECT_MODELS``: a JSON map
from a service name to its base URL), reached through Inspect's ``openai-api`` provider, so every
request takes Inspect's real path. Prints one partial report per environment; the main process adds
what the model was sent (``tests/matrix/frameworks/inspect.py``).
"""

# ruff: noqa: E402
from __future__ import annotations

import sys

# this file's folder comes first on the path, and its name is the framework's own: take it off
sys.path[:] = [p for p in sys.path if p != __file__.rsplit("/", 1)[0]]

import json
import os
import tempfile
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog

from omnienv.dialects.inspect_eval import environment_task
from tests.matrix.cells import CELLS, MAX_CALLS, crash_report, print_report

SCORER = "_episode_reward"


def run(env: str, service: str, log_dir: str) -> EvalLog:
    cell = CELLS[env]
    task = environment_task(cell.spec, tasks=[cell.task_id], max_turns=MAX_CALLS)
    [log] = inspect_eval(
        task,
        model=f"openai-api/{service}/scripted",
        display="none",
        log_dir=log_dir,
        max_samples=1,
        fail_on_error=False,
    )
    if log.status != "success":
        raise RuntimeError(f"{env}: Inspect's eval ended {log.status}: {log.error}")
    return log


def sample_of(log: EvalLog) -> Any:
    [sample] = log.samples or []
    return sample


def main() -> int:
    services: dict[str, str] = json.loads(os.environ["MATRIX_INSPECT_MODELS"])
    for service, url in services.items():
        os.environ[f"{service.upper()}_BASE_URL"] = url
        os.environ[f"{service.upper()}_API_KEY"] = "scripted"
    with tempfile.TemporaryDirectory() as log_dir:
        for env in CELLS:
            sample = sample_of(run(env, env, log_dir))
            score = (sample.scores or {}).get(SCORER)
            crashed = sample_of(run(env, f"{env}crash", log_dir))
            crash_score = (crashed.scores or {}).get(SCORER)
            print_report(
                {
                    "kind": "inspect",
                    "env": env,
                    "total": None if score is None else score.value,
                    "done": bool(score is not None and (score.metadata or {}).get("done")),
                    "crash": crash_report(
                        None if crash_score is None else crash_score.value,
                        "no score (the scorer returned None)",
                        crash_score is None or crash_score.value is None,
                    ),
                    "seen": [sample.input, sample.metadata, crashed.input, crashed.metadata],
                    "notes": f"crash sample scores: {crashed.scores!r}; error: {crashed.error!r}",
                }
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
