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
        self.seed = _seed()
        self.log = _log_dir() / "calls.jsonl"
        self.cls = env_class(self.spec)
        self.raw = self.cls()
        self.env = as_sync(self.raw)
        self.prompt = self.env.reset(task=self.task, seed=self.seed)
        self.over = False
        calls = self.calls()
        self.made = len(calls)
        for call in calls:
            self.over = self._step(call).done or self.over

    def calls(self) -> list[ToolCall]:
        """The calls in the log, in order; a line that holds no call is an error, never skipped, and
        so is a log of more calls than an episode may make: the episode graded would not be the one
        the agent played."""
        if not self.log.is_file():
            return []
        lines = self.log.read_bytes().splitlines()
        if len(lines) > MAX_CALLS:
            raise fail(
                f"the call log {self.log} holds {len(lines)} calls, more than the {MAX_CALLS} an episode may make "
                "(`omnienv harbor act` refuses the one past them): it was not written by it alone"
            )
        return [self._call(number, line) for number, line in enumerate(lines, 1)]

    def _call(self, number: int, line: bytes) -> ToolCall:
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise self._broken(number, f"not JSON: {exc}") from None
        arguments = data.get("arguments") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise self._broken(number, "not an object with the tool's 'name'")
        if not isinstance(arguments, dict | None):
            raise self._broken(number, "its 'arguments' are not an object")
        return ToolCall(data["name"], arguments or {})

    def _broken(self, number: int, why: str) -> typer.Exit:
        return fail(
            f"the call log {self.log} is broken at line {number} ({why}): each line must be a call as "
            '`omnienv harbor act` writes it, {"name": TOOL, "arguments": {...}}'
        )

    def _step(self, call: ToolCall) -> StepResult:
        result = self.env.step(call)
        episode = self.raw.episode
        self.over = bool(episode is not None and episode.over)
        return result

    def act(self, call: ToolCall) -> StepResult:
        if self.over:
            raise fail("the episode is over: no more actions")
        if self.made >= MAX_CALLS:
            raise fail(f"this episode has made its {MAX_CALLS} calls: no more actions (it is graded as it stands)")
        result = self._step(call)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as file:
            file.write(orjson.dumps({"name": call.name, "arguments": call.arguments}) + b"\n")
        return result

    def close(self) -> None:
        self.env.close()


def _seed() -> int:
    """The task's seed: ``OMNIENV_HARBOR_SEED``, which the task's Dockerfile sets."""
    text = os.environ.get("OMNIENV_HARBOR_SEED", "0")
    try:
        return int(text)
    except ValueError:
        raise fail(
            f"OMNIENV_HARBOR_SEED={text!r} is not a whole number: it holds the task's seed, as the task's "
            "Dockerfile sets it (unset, 0)"
        ) from None


def _log_dir() -> Path:
    """The folder of the call log: ``OMNIENV_HARBOR_DIR``, by default ``/app/.omnienv``."""
    folder = Path(os.environ.get("OMNIENV_HARBOR_DIR", "/app/.omnienv"))
    if folder.exists() and not folder.is_dir():
        raise fail(
            f"OMNIENV_HARBOR_DIR={folder} is not a directory: it names the folder that holds the call log "
            "(calls.jsonl); point it at a folder, or unset it for /app/.omnienv"
        )
    return folder


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
