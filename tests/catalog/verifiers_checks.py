"""Checks of the Verifiers importer, run inside a verifiers virtualenv with that venv's python.

``python tests/catalog/verifiers_checks.py classic`` (verifiers 0.3.1: ``vf_single.py``, a
``SingleTurnEnv``, and ``vf_tools.py``, a ``ToolEnv``) or ``... v1`` (verifiers 0.4.0:
``vf_v1_tasks.py``, a taskset with a toolset) prints JSON lines that
tests/peers/test_catalog_verifiers.py reads: the contract checks, the tools and tasks, episodes
scored by the environment's own rubric, the trainer's cut, an exception inside the Verifiers
environment (a flagged failure), an episode over omnienv's ``/ws`` (classic) and ``omnienv
import verifiers`` naming a module for the other commands. omnienv is installed in these venvs
from this source tree; the repository root goes on the path for the test modules.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from omnienv.catalog.verifiers import environment
from omnienv.core import StepResult, SyncEnv, ToolCall, UnknownEnvironmentError, as_sync, check_env, load_environment

SINGLE, TOOLS, V1 = (f"verifiers/tests.catalog.{name}" for name in ("vf_single", "vf_tools", "vf_v1_tasks"))


def emit(kind: str, **fields: Any) -> None:
    print(json.dumps({"kind": kind, **fields}), flush=True)


def outcome(result: StepResult) -> dict[str, Any]:
    return {
        "text": result.observation.text,
        "is_error": result.observation.is_error,
        "reward": result.reward,
        "done": result.done,
        "truncated": result.truncated,
        "info": result.info,
        "failure": result.failure.to_dict() if result.failure else None,
    }


def described(name: str, args: str = "{}") -> None:
    cls = environment(name, args)
    report = check_env(cls)
    emit(
        "load",
        name=name,
        splits={split: [task.to_dict(include_answer=True) for task in cls.tasks(split)] for split in cls.splits},
        tools={tool: spec.parameters for tool, spec in cls.tools.items()},
        max_turns=cls.max_turns,
        ok=report.ok,
        failures=[f"{r.name}: {r.message}" for r in report.failures],
    )


def refusals(**modules: Any) -> None:
    """What loading each of ``modules`` (name -> attributes of a module made here) says."""
    said = {}
    for name, attributes in modules.items():
        if attributes is not None:
            sys.modules[name] = types.ModuleType(name)
            vars(sys.modules[name]).update(attributes)
        try:
            environment(f"verifiers/{name}")
            said[name] = None
        except UnknownEnvironmentError as exc:
            said[name] = exc.message
    emit("refused", said=said)


def play(env: SyncEnv, task: str, calls: list[ToolCall]) -> dict[str, Any]:
    prompt = env.reset(task=task).text
    results = [outcome(env.step(call)) for call in calls]
    return {"prompt": prompt, "results": results, "state": env.state().to_dict()}


def classic() -> None:
    for name in (SINGLE, TOOLS):
        described(name)
    single = as_sync(load_environment(SINGLE)())
    right = play(single, "eval/00001", [ToolCall("answer", {"text": "27"})])
    wrong = play(single, "train/00000", [ToolCall("answer", {"text": "The sum is 5."})])
    single.reset(task="train/00001")
    cut = outcome(single.end())
    single.close()
    emit("single", right=right, wrong=wrong, cut=cut)

    broken = as_sync(environment(SINGLE, '{"broken": true}')())
    emit("single_broken", **play(broken, "train/00000", [ToolCall("answer", {"text": "5"})]))
    broken.close()

    tools = as_sync(load_environment(TOOLS)())
    calls = [ToolCall("add", {"a": 40, "b": 2}), ToolCall("add", {"a": -1, "b": 2}), ToolCall("answer", {"text": "42"})]
    emit("tools", **play(tools, "train/00001", calls))
    tools.close()

    stopping = as_sync(environment(TOOLS, '{"stop_on_error": true}')())
    emit("tools_broken", **play(stopping, "train/00000", [ToolCall("add", {"a": -1, "b": 2})]))
    stopping.close()

    over_ws()
    cli()
    refusals(no_such_module_here=None, json=None)


def over_ws() -> None:
    from omnienv.app import create_app
    from omnienv.client import WebSocketClient
    from omnienv.server import running

    with running(create_app(TOOLS, plugins=[])) as url, WebSocketClient(url) as env:
        prompt = env.reset(task="train/00000").text
        added = env.step(ToolCall("add", {"a": 2, "b": 3}))
        answered = env.step(ToolCall("answer", {"text": "5"}))
        emit("ws", prompt=prompt, tools=sorted(env.tools), added=outcome(added), answered=outcome(answered))


def cli() -> None:
    from typer.testing import CliRunner

    from omnienv.cli.main import app

    runner = CliRunner(env={"COLUMNS": "200"})
    with tempfile.TemporaryDirectory() as config:
        os.environ["XDG_CONFIG_HOME"] = config
        imported = runner.invoke(
            app, ["import", "verifiers", "tests.catalog.vf_tools", "--name", "vf-tools", "--args", '{"max_turns": 4}']
        )
        listed = runner.invoke(app, ["list", "--json", "--source", "verifiers"])
        checked = runner.invoke(app, ["check", "vf-tools"])
        saved = json.loads((Path(config) / "omnienv" / "imports.json").read_text())
        loaded = load_environment("vf-tools")
        not_json = runner.invoke(app, ["import", "verifiers", "tests.catalog.vf_tools", "--name", "x", "--args", "{"])
        emit(
            "cli",
            imported=[imported.exit_code, imported.output],
            listed=json.loads(listed.output) if listed.exit_code == 0 else listed.output,
            checked=[checked.exit_code, checked.output],
            saved=saved,
            tools=sorted(loaded.tools),
            vf_max_turns=loaded.vf_env.max_turns,  # type: ignore[attr-defined]
            not_json=[not_json.exit_code, not_json.output],
        )


def v1() -> None:
    described(V1)
    described(V1, '{"task": {"tools": false}}')
    env = as_sync(load_environment(V1)())
    calls = [ToolCall("add", {"a": 40, "b": 2}), ToolCall("add", {"a": -1, "b": 2}), ToolCall("answer", {"text": "42"})]
    played = play(env, "train/00001", calls)
    env.reset(task="train/00000")
    env.step(ToolCall("add", {"a": 2, "b": 3}))
    cut = outcome(env.end())
    cut_state = env.state().to_dict()
    env.close()
    emit("v1_tools", **played, cut=cut, cut_state=cut_state)

    single = as_sync(environment(V1, '{"task": {"tools": false}}')())
    right = play(single, "train/00002", [ToolCall("answer", {"text": "15"})])
    wrong = play(single, "train/00002", [ToolCall("answer", {"text": "16"})])
    single.close()
    emit("v1_single", right=right, wrong=wrong)

    broken = as_sync(environment(V1, '{"broken": true}')())
    emit("v1_broken", **play(broken, "train/00000", [ToolCall("answer", {"text": "5"})]))
    broken.close()
    refusals(old_style={"load_environment": lambda: None})


if __name__ == "__main__":
    {"classic": classic, "v1": v1}[sys.argv[1]]()
