"""Wordle served by OpenEnv 0.10.0, two ways, both speaking the same /ws frames as omnienv's server.

- ``mcp``: an ``MCPEnvironment`` whose tools are FastMCP tools, the way OpenEnv's own tool-calling
  environments (echo_env and friends) are written; steps run on the server's event loop.
- ``plain``: an ``Environment`` with one pydantic Action shaped like OpenEnv's MCP actions
  (``{"type": "call_tool", "tool_name": ..., "arguments": ...}``); steps run in the per-session
  thread OpenEnv gives synchronous environments. No FastMCP on the hot path, so this is the
  fastest faithful OpenEnv baseline.

Usage (OpenEnv's virtualenv): ``python -m benchmarks.openenv_wordle.server --variant mcp --port P``,
or ``--port 0`` to let the kernel choose; the bound port is printed as ``PORT <n>`` either way.
"""

from __future__ import annotations

import argparse
import socket
import sys
import uuid
from pathlib import Path
from typing import Any, Literal

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fastmcp import FastMCP
from openenv.core.env_server import (
    Action,
    CallToolAction,
    CallToolObservation,
    Environment,
    MCPEnvironment,
    Observation,
    State,
    create_app,
)
from pydantic import Field

from benchmarks.openenv_wordle.game import MAX_ATTEMPTS, PROMPT, WordleGame, answer_for

__all__ = ["WordleAction", "WordleMCPEnvironment", "WordleObservation", "WordlePlainEnvironment", "build_app"]

GUESS_DOC = "Guess the hidden word.\n\nArgs:\n    word: A five-letter English word."
HISTORY_DOC = "Show every guess so far with its marks."


class WordleState(State):
    guesses: list[str] = Field(default_factory=list)
    marks: list[str] = Field(default_factory=list)
    attempts_left: int = MAX_ATTEMPTS


class WordlePromptObservation(Observation):
    """What reset returns: the prompt."""

    prompt: str = ""


class _Game:
    """Episode bookkeeping both variants share."""

    game: WordleGame

    def _new_episode(self, seed: int | None, episode_id: str | None, task_id: str | None) -> None:
        self.game = WordleGame(answer_for(task_id, seed))
        self._episode_id = episode_id or str(uuid.uuid4())
        self._steps = 0

    def _state(self) -> WordleState:
        game = getattr(self, "game", None)
        if game is None:
            return WordleState(episode_id=None, step_count=0)
        return WordleState(
            episode_id=self._episode_id,
            step_count=self._steps,
            guesses=list(game.guesses),
            marks=list(game.marks),
            attempts_left=MAX_ATTEMPTS - len(game.guesses),
        )


class WordleMCPEnvironment(_Game, MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("wordle")
        self._outcome: tuple[float, bool] = (0.0, False)

        def guess(word: str) -> str:
            text, reward, done = self.game.guess(word)
            self._outcome = (reward, done)
            return text

        def get_history() -> str:
            return self.game.history()

        guess.__doc__, get_history.__doc__ = GUESS_DOC, HISTORY_DOC
        mcp.tool(guess)
        mcp.tool(get_history)
        super().__init__(mcp)
        self._new_episode(None, None, None)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None, **kwargs: Any
    ) -> Observation:
        self._new_episode(seed, episode_id, task_id)
        return WordlePromptObservation(prompt=PROMPT, reward=0.0, done=False)

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._outcome = (0.0, False)
        obs = await super().step_async(action, timeout_s=timeout_s, **kwargs)
        return self._score(action, obs)

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._outcome = (0.0, False)
        return self._score(action, super().step(action, timeout_s=timeout_s, **kwargs))

    def _score(self, action: Action, obs: Observation) -> Observation:
        if isinstance(action, CallToolAction):
            self._steps += 1
            obs.reward, obs.done = self._outcome
        return obs

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return Observation(metadata={"error": f"unsupported action {type(action).__name__}"})

    @property
    def state(self) -> WordleState:
        return self._state()


class WordleAction(Action):
    type: Literal["call_tool", "list_tools"] = "call_tool"
    tool_name: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)


class WordleObservation(Observation):
    prompt: str | None = None
    tool_name: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None


TOOLS = [
    {
        "name": "guess",
        "description": GUESS_DOC,
        "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    },
    {"name": "get_history", "description": HISTORY_DOC, "input_schema": {"type": "object", "properties": {}}},
]


def _text_result(text: str, is_error: bool = False) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text}],
        "structured_content": None,
        "meta": None,
        "data": text,
        "is_error": is_error,
    }


class WordlePlainEnvironment(_Game, Environment[WordleAction, WordleObservation, WordleState]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._new_episode(None, None, None)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None, **kwargs: Any
    ) -> WordleObservation:
        self._new_episode(seed, episode_id, task_id)
        return WordleObservation(prompt=PROMPT, reward=0.0, done=False)

    def step(self, action: WordleAction, timeout_s: float | None = None, **kwargs: Any) -> WordleObservation:
        if action.type == "list_tools":
            return WordleObservation(tools=TOOLS)
        self._steps += 1
        name = action.tool_name
        if name == "guess":
            try:
                text, reward, done = self.game.guess(str(action.arguments.get("word", "")))
            except ValueError as exc:
                return WordleObservation(tool_name=name, result=_text_result(str(exc), True), reward=0.0)
            return WordleObservation(tool_name=name, result=_text_result(text), reward=reward, done=done)
        if name == "get_history":
            return WordleObservation(tool_name=name, result=_text_result(self.game.history()), reward=0.0)
        return WordleObservation(
            tool_name=name, reward=0.0, error={"error_type": "tool_not_found", "message": f"unknown tool {name!r}"}
        )

    @property
    def state(self) -> WordleState:
        return self._state()


def build_app(variant: str, max_sessions: int) -> Any:
    if variant == "mcp":
        return create_app(
            WordleMCPEnvironment,
            CallToolAction,
            CallToolObservation,
            env_name="wordle",
            max_concurrent_envs=max_sessions,
        )
    if variant == "plain":
        return create_app(
            WordlePlainEnvironment, WordleAction, WordleObservation, env_name="wordle", max_concurrent_envs=max_sessions
        )
    raise SystemExit(f"unknown variant {variant!r}; use 'mcp' or 'plain'")


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("mcp", "plain"), default="mcp")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-sessions", type=int, default=1024)
    args = parser.parse_args()
    app = build_app(args.variant, args.max_sessions)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", backlog=4096)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
