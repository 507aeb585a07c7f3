"""``omnienv harbor act|grade|solve``: the commands inside a task that ``omnienv export harbor`` wrote.

The task's environment variables name the environment, task and seed; every action is appended
to a call log in the workspace, and each command replays the log into a fresh environment first,
so the episode lives in the log alone (:mod:`omnienv.envs.terminal.export`).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from omnienv.cli.common import console, env_class, fail
from omnienv.core import OmniEnvError, StepResult, ToolCall, as_sync
from omnienv.rollout import make_policy
from omnienv.rollout.trajectory import Episode, Step

__all__ = ["harbor_app"]

harbor_app = typer.Typer(
    help="Act in, grade and solve a task written by 'omnienv export harbor'.", no_args_is_help=True
)
MAX_CALLS = 500


class Replay:
    """The task's episode, rebuilt from its call log."""

    def __init__(self) -> None:
        try:
            self.spec = os.environ["OMNIENV_HARBOR_ENV"]
            self.task = os.environ["OMNIENV_HARBOR_TASK"]
        except KeyError as exc:
            raise fail(f"{exc.args[0]} is not set: run this inside a task written by 'omnienv export harbor'") from None
        self.seed = int(os.environ.get("OMNIENV_HARBOR_SEED", "0"))
        self.log = Path(os.environ.get("OMNIENV_HARBOR_DIR", "/app/.omnienv")) / "calls.jsonl"
        self.cls = env_class(self.spec)
        self.raw = self.cls()
        self.env = as_sync(self.raw)
        self.prompt = self.env.reset(task=self.task, seed=self.seed)
        self.over = False
        for call in self.calls():
            self.over = self._step(call).done or self.over

    def calls(self) -> list[ToolCall]:
        if not self.log.is_file():
            return []
        found = []
        for line in self.log.read_bytes().splitlines()[:MAX_CALLS]:
            data = orjson.loads(line)
            found.append(ToolCall(str(data["name"]), dict(data.get("arguments") or {})))
        return found

    def _step(self, call: ToolCall) -> StepResult:
        result = self.env.step(call)
        episode = self.raw.episode
        self.over = bool(episode is not None and episode.over)
        return result

    def act(self, call: ToolCall) -> StepResult:
        if self.over:
            raise fail("the episode is over: no more actions")
        result = self._step(call)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as file:
            file.write(orjson.dumps({"name": call.name, "arguments": call.arguments}) + b"\n")
        return result

    def close(self) -> None:
        self.env.close()


def _show(result: StepResult) -> None:
    console.print(result.observation.text, markup=False, highlight=False)
    if result.done or result.truncated:
        console.print("[the episode is over]", markup=False)


@harbor_app.command()
def act(
    tool: Annotated[str, typer.Argument(help="The tool to call")],
    arguments: Annotated[str, typer.Argument(help="Its arguments as a JSON object")] = "{}",
) -> None:
    """Call one of the environment's tools and print what it answers."""
    try:
        parsed: Any = orjson.loads(arguments)
    except orjson.JSONDecodeError as exc:
        raise fail(f'the arguments are not JSON ({exc}); pass an object like \'{{"word": "crane"}}\'') from None
    if not isinstance(parsed, dict):
        raise fail("the arguments must be a JSON object")
    replay = Replay()
    try:
        _show(replay.act(ToolCall(tool, parsed)))
    finally:
        replay.close()


@harbor_app.command()
def grade(
    out: Annotated[Path, typer.Option(help="Where to write reward.json")] = Path("/logs/verifier/reward.json"),
) -> None:
    """Replay the call log and write the episode's reward (nothing for a void episode)."""
    replay = Replay()
    try:
        if not replay.over:
            replay.env.end()
        episode = replay.raw.episode
        if episode is None or episode.failure is not None:
            raise fail(f"the episode failed and is not scored: {episode.failure if episode else 'no episode'}")
        reward = episode.final_reward if episode.final_reward is not None else episode.reward
    finally:
        replay.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(orjson.dumps({"reward": reward}))
    console.print(f"reward {reward:g}")


@harbor_app.command()
def solve(policy: Annotated[str, typer.Option(help="The environment's scripted player")] = "solver") -> None:
    """Play the environment's own scripted player through the call log (a task's oracle)."""
    replay = Replay()
    try:
        player = make_policy(policy, replay.cls)()
    except (ValueError, OmniEnvError) as exc:
        raise fail(str(exc)) from None
    episode = Episode(replay.cls.name, 0, replay.task, replay.seed, player.name, prompt=replay.prompt)
    try:
        for _ in range(MAX_CALLS):
            if replay.over:
                break
            call = asyncio.run(player.act(episode))
            result = replay.act(call)
            episode.steps.append(Step(call, result, 0.0))
    finally:
        replay.close()
