"""Run in verifiers 0.4's virtualenv: every matrix cell through verifiers' own eval runner.

For each environment the taskset is ``omnienv-verifiers`` (the v1 taskset, resolved by name as
``vf-eval`` resolves it) on the cell's task, played by verifiers' ``null`` chat harness against the
scripted model whose URL ``MATRIX_MODEL_<ENV>`` names (``MATRIX_CRASH_<ENV>`` for the crash
episode): verifiers owns the loop, its tool process steps our environment, its host scores the
trace. verifiers reports one reward per trace, not per step, so ``rewards`` is None.

Prints one report per environment; ``seen`` here is what verifiers built before the model was
asked (the tasks' data and the trace's task); the matrix adds what the model was sent.
"""

from __future__ import annotations

import sys

if sys.path and sys.path[0].endswith("drivers"):  # this folder's modules shadow the packages they drive
    del sys.path[0]

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic_config import cli
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.cli.resolve import narrow_config, with_positional_taskset
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.utils.loaders import load_environment

from tests.matrix.cells import CELLS, ENVS, Cell, cell_report, crash_report, print_report

TASKSET = "omnienv-verifiers"


def eval_config(cell: Cell, base_url: str, out: Path) -> EvalConfig:
    """The config ``vf-eval`` would parse from the same command line."""
    argv = with_positional_taskset(
        [
            TASKSET,
            *("--env.taskset.env", cell.spec, "--env.taskset.split", "test", "--env.taskset.tasks", cell.task_id),
            *("--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess"),
            *("-m", "scripted", "--client.base-url", base_url, "--client.api-key-var", "MATRIX_KEY"),
            *("-n", "1", "-r", "1", "--no-push", "--no-rich", "-o", str(out)),
        ]
    )
    config_type = narrow_config(EvalConfig, argv)
    saved, sys.argv = sys.argv, ["vf-eval", *argv]
    try:
        return cli(config_type)  # type: ignore[no-any-return]
    finally:
        sys.argv = saved


async def one_trace(config: EvalConfig) -> Any:
    (episode,) = await run_eval(config)
    (trace,) = episode.traces
    return trace


async def play(env: str, out: Path) -> dict[str, Any]:
    cell = CELLS[env]
    config = eval_config(cell, os.environ[f"MATRIX_MODEL_{env.upper()}"], out / env)
    crash_config = eval_config(cell, os.environ[f"MATRIX_CRASH_{env.upper()}"], out / f"{env}-crash")
    tasks = list(load_environment(config.env).taskset)  # the rows verifiers builds, as the eval does
    seen: list[Any] = [task.data.model_dump(mode="json") for task in tasks]
    trace, crashed = await asyncio.gather(one_trace(config), one_trace(crash_config))
    seen.append(trace.task.data.model_dump(mode="json"))
    assert trace.ok, f"{env}: the rollout failed: {trace.errors}"

    reward = crashed.rewards.get("episode_reward")
    masked = not crashed.ok and any(error.type == "TaskError" for error in crashed.errors)
    crash = crash_report(None if reward is None else reward.score, "trace.errors (TaskError), rewards None", masked)
    notes = f"stop={trace.stop_condition} turns={trace.num_turns} crash stop={crashed.stop_condition}"
    return cell_report(
        env, rewards=None, total=trace.reward, done=trace.state.done, crash=crash, seen=seen, notes=notes
    )


async def play_all(out: Path) -> list[dict[str, Any]]:
    """All cells at once: each rollout mostly waits on its processes starting."""
    return list(await asyncio.gather(*(play(env, out) for env in ENVS)))


def main() -> None:
    os.environ.setdefault("MATRIX_KEY", "unused")
    with tempfile.TemporaryDirectory() as tmp:
        for report in asyncio.run(play_all(Path(tmp))):
            print_report(report)


if __name__ == "__main__":
    main()
