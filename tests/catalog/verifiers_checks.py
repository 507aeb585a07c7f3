"""Checks of the Verifiers importer, run inside a verifiers virtualenv with that venv's python.

``python tests/catalog/verifiers_checks.py classic`` (verifiers 0.3.1: ``vf_single.py``, a
``SingleTurnEnv``, and ``vf_tools.py``, a ``ToolEnv``) or ``... v1`` (verifiers 0.4.0:
``vf_v1_tasks.py``, a taskset with a toolset) prints JSON lines that
tests/peers/test_catalog_verifiers.py reads: the contract checks, the tools and tasks, episodes
scored by the environment's own rubric, the trainer's cut, an exception inside the Verifiers
environment (a flagged failure), an episode over omnienv's ``/ws`` (classic) and ``omnienv
import verifiers`` naming a module for the other commands. Classic also plays an imported
``ToolEnv`` three ways for the same tasks and moves: by verifiers itself (its ``run_rollout``
with a scripted model), over ``/ws`` from a real server of the imported name, and through TRL's
``environment_factory`` in-process (the in-process dialect these venvs can run: they have no
Gymnasium). omnienv is installed in these venvs from this source tree; the repository root goes
on the path for the test modules.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
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
    against_the_source()
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


SAME_MOVES = {
    # answered after a tool call and a tool error: verifiers ends it (no tool called), scored 1
    "train/00001": [("add", {"a": 40, "b": 2}), ("add", {"a": -1, "b": 2}), ("answer", {"text": "42"})],
    # tools until max_turns (4, from the import's --args): verifiers stops it, the rubric scores 0
    "train/00000": [("add", {"a": 2, "b": 3})] * 4,
}
"""Tasks of the imported ``vf_tools`` (max_turns 4) and the moves played on each: a tool call, or
``answer``, the plain message."""


def against_the_source() -> None:
    """``SAME_MOVES`` played by verifiers itself, over ``/ws`` and through TRL's dialect."""
    from verifiers.clients import Client
    from verifiers.types import Response, ResponseMessage
    from verifiers.types import ToolCall as VfToolCall

    from tests.catalog import vf_tools

    class Scripted(Client):  # type: ignore[misc]
        """A model that answers each model call with the next of ``moves``, as a chat model would."""

        def __init__(self, moves: list[tuple[str, dict[str, Any]]]) -> None:
            super().__init__(None)
            self.moves = list(moves)

        def setup_client(self, config: Any) -> Any:
            raise NotImplementedError

        async def to_native_tool(self, tool: Any) -> Any:
            return tool

        async def to_native_prompt(self, messages: Any) -> tuple[Any, dict[str, Any]]:
            return messages, {}

        async def get_native_response(
            self, prompt: Any, model: str, sampling_args: Any, tools: Any = None, **kwargs: Any
        ) -> Any:
            name, arguments = self.moves.pop(0)
            if name == "answer":
                message = ResponseMessage(content=arguments["text"], finish_reason="stop", is_truncated=False)
            else:
                call = VfToolCall(id=f"call_{len(self.moves)}", name=name, arguments=json.dumps(arguments))
                message = ResponseMessage(tool_calls=[call], finish_reason="tool_calls", is_truncated=False)
            return Response(id="scripted", created=int(time.time()), model=model, message=message)

        async def raise_from_native_response(self, response: Any) -> None:
            return None

        async def from_native_response(self, response: Any) -> Any:
            return response

        async def close(self) -> None:
            return None

    vf_env = vf_tools.load_environment(max_turns=4)
    rows = vf_env.get_dataset()
    source = {}
    for task, moves in SAME_MOVES.items():
        model = Scripted(moves)
        output = asyncio.run(vf_env.run_rollout(dict(rows[int(task.split("/")[1])]), model, "scripted", {}))
        source[task] = {
            "reward": output["reward"],
            "stop_condition": output["stop_condition"],
            "metrics": dict(output["metrics"]),
            "error": None if output.get("error") is None else str(output["error"]),
            "moves": len(moves) - len(model.moves),  # the model calls the rollout made
        }

    from typer.testing import CliRunner

    from omnienv.app import create_app
    from omnienv.cli.main import app
    from omnienv.client import WebSocketClient
    from omnienv.dialects.trl import environment_factory
    from omnienv.server import running

    before = os.environ.get("XDG_CONFIG_HOME")
    with tempfile.TemporaryDirectory() as config:
        os.environ["XDG_CONFIG_HOME"] = config
        command = ["import", "verifiers", "tests.catalog.vf_tools", "--name", "vf-sample", "--args"]
        imported = CliRunner().invoke(app, [*command, '{"max_turns": 4}'])
        assert imported.exit_code == 0, imported.output
        # plugins=[]: no ORS or NeMo Gym routes; this venv lacks NeMo Gym's itsdangerous, so `omnienv serve` fails here
        ws = {}
        with running(create_app("vf-sample", plugins=[])) as url, WebSocketClient(url) as client:
            for task, moves in SAME_MOVES.items():
                client.reset(task=task)
                steps = [outcome(client.step(ToolCall(name, arguments))) for name, arguments in moves]
                ws[task] = {"steps": steps, "state": client.state().to_dict()}
        trl = {}
        factory = environment_factory("vf-sample")
        for task, moves in SAME_MOVES.items():
            env = factory()
            env.reset(task_id=task)
            said = [getattr(env, name)(**arguments) for name, arguments in moves]
            after = env.add(a=1, b=1)  # once the episode is over, TRL's tools say so
            trl[task] = {"said": said, "after": after, "reward": env.get_reward(), "failure": env.failure is not None}
            env._close()
    if before is None:
        os.environ.pop("XDG_CONFIG_HOME")
    else:
        os.environ["XDG_CONFIG_HOME"] = before
    emit("same_moves", source=source, ws=ws, trl=trl)


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
