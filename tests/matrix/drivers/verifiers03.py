"""Run in verifiers 0.3's virtualenv: every matrix cell through the classic ``Environment.evaluate``.

For each environment ``vf.load_environment("omnienv-verifiers", ...)`` builds the classic
``StatefulToolEnv`` on the cell's task; ``evaluate`` runs the rollout with verifiers' own OpenAI
chat client against the scripted model whose URL ``MATRIX_MODEL_<ENV>`` names
(``MATRIX_CRASH_<ENV>`` for the crash episode) and scores it with the rubric. verifiers reports one
reward per rollout, so ``rewards`` is None.

Prints one report per environment; ``seen`` here is what verifiers built (the dataset's rows and
each rollout's prompt and info); the matrix adds what the model was sent.
"""

from __future__ import annotations

import sys

if sys.path and sys.path[0].endswith("drivers"):  # this folder's modules shadow the packages they drive
    del sys.path[0]

import asyncio
import math
import os
from typing import Any

import verifiers as vf
from verifiers.types import ClientConfig

from tests.matrix.cells import CELLS, ENVS, cell_report, crash_report, print_report


async def rollout(env: Any, base_url: str) -> dict[str, Any]:
    client = ClientConfig(api_key_var="MATRIX_KEY", api_base_url=base_url, max_retries=0)
    results = await env.evaluate(
        client=client, model="scripted", num_examples=1, rollouts_per_example=1, state_columns=["omnienv"]
    )
    (output,) = results["outputs"]
    return dict(output)


def play(name: str) -> dict[str, Any]:
    cell = CELLS[name]
    env = vf.load_environment("omnienv-verifiers", env=cell.spec, split="test", tasks=[cell.task_id])
    seen: list[Any] = [dict(row) for row in env.get_eval_dataset()]
    output = asyncio.run(rollout(env, os.environ[f"MATRIX_MODEL_{name.upper()}"]))
    assert output.get("error") is None, f"{name}: the rollout failed: {output['error']}"
    seen += [output["prompt"], output.get("info"), output.get("answer")]

    crashed = asyncio.run(rollout(env, os.environ[f"MATRIX_CRASH_{name.upper()}"]))
    reward = crashed["reward"]
    error = crashed.get("error") or {}
    masked = "InfraError" in str(error) and isinstance(reward, float) and math.isnan(reward)
    crash = crash_report(reward, "state['error'] (InfraError), reward NaN", masked)
    notes = f"stop={output.get('stop_condition')} crash stop={crashed.get('stop_condition')}"
    return cell_report(
        name,
        rewards=None,
        total=output["reward"],
        done=bool(output["omnienv"]["done"]),
        crash=crash,
        seen=seen,
        notes=notes,
    )


def main() -> None:
    os.environ.setdefault("MATRIX_KEY", "unused")
    for name in ENVS:
        print_report(play(name))


if __name__ == "__main__":
    main()
