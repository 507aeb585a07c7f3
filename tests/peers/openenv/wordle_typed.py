"""OpenEnv 0.10.0's view of a Wordle server: a typed client, and readers of what its clients return.

The typed client is written the way an environment author writes one against OpenEnv's public API
(``EnvClient`` subclass, OpenEnv's MCP action/observation models), so shape drift that
``GenericEnvClient``'s plain dicts would tolerate still shows up. The readers take either kind of
observation (a model or a plain dict) and say what it holds, so wordle_client.py's scenarios
report the same fields whichever client played. Runs in OpenEnv's virtualenv only.
"""

from __future__ import annotations

import json
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Observation,
    State,
    Tool,
    ToolError,
)
from pydantic import Field


class WordlePrompt(Observation):
    """The observation after reset: the prompt text."""

    prompt: str = ""


class WordleState(State):
    guesses: list[str] = Field(default_factory=list)


class WordleEnv(EnvClient[CallToolAction | ListToolsAction, Observation, WordleState]):
    """A typed OpenEnv client for a Wordle server speaking OpenEnv's MCP actions over /ws."""

    def _step_payload(self, action: CallToolAction | ListToolsAction) -> dict[str, Any]:
        if isinstance(action, ListToolsAction):
            return {"type": "list_tools"}
        return {"type": "call_tool", "tool_name": action.tool_name, "arguments": action.arguments}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Observation]:
        obs = payload["observation"]
        common = {"done": payload["done"], "reward": payload["reward"], "metadata": obs.get("metadata", {})}
        observation: Observation
        if "tools" in obs:
            tools = [
                Tool(
                    name=t["name"],
                    description=t.get("description", ""),
                    input_schema=t.get("input_schema", t.get("inputSchema", {})),
                )
                for t in obs["tools"]
            ]
            observation = ListToolsObservation(tools=tools, **common)
        elif "tool_name" in obs:
            error = ToolError(**obs["error"]) if obs.get("error") else None
            observation = CallToolObservation(
                tool_name=obs["tool_name"], result=obs.get("result"), error=error, **common
            )
        else:
            observation = WordlePrompt(prompt=prompt_text(obs), **common)
        return StepResult(
            observation=observation,
            reward=payload.get("reward"),
            done=payload.get("done", False),
            metadata=payload.get("metadata"),
        )

    def _parse_state(self, payload: dict[str, Any]) -> WordleState:
        return WordleState(
            episode_id=payload.get("episode_id"),
            step_count=payload.get("step_count", 0),
            guesses=payload.get("guesses", []),
        )


def prompt_text(obs: dict[str, Any]) -> str:
    """The reset text wherever a server puts it: a ``prompt`` field, text blocks, or a result."""
    if isinstance(obs.get("prompt"), str):
        return obs["prompt"]
    return text_of(obs) or json.dumps(obs, ensure_ascii=False)


def text_of(obs: Any) -> str:
    """Text of an MCP-shaped observation: ``result.content[*].text`` (or the error message)."""
    if hasattr(obs, "model_dump"):
        obs = obs.model_dump()
    result = obs.get("result")
    if isinstance(result, dict):
        texts = [b.get("text", "") for b in result.get("content") or [] if b.get("type") == "text"]
        if texts:
            return "\n".join(texts)
        if isinstance(result.get("data"), str):
            return result["data"]
    content = obs.get("content")
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    error = obs.get("error")
    if isinstance(error, dict):
        return str(error.get("message", ""))
    return ""


def is_error(obs: Any) -> bool:
    if hasattr(obs, "model_dump"):
        obs = obs.model_dump()
    result = obs.get("result")
    return bool(obs.get("error")) or (isinstance(result, dict) and bool(result.get("is_error")))


def tool_names(obs: Any) -> list[str]:
    if hasattr(obs, "tools"):
        return [t.name for t in obs.tools]
    return [t["name"] for t in obs.get("tools", [])]


def state_dict(state: Any) -> dict[str, Any]:
    return state.model_dump() if hasattr(state, "model_dump") else dict(state)


def guess_action(word: str, typed: bool) -> Any:
    if typed:
        return CallToolAction(tool_name="guess", arguments={"word": word})
    return {"type": "call_tool", "tool_name": "guess", "arguments": {"word": word}}


def list_tools_action(typed: bool) -> Any:
    return ListToolsAction() if typed else {"type": "list_tools"}


def record(name: str, value: Any) -> dict[str, Any]:
    obs = value.observation
    return {
        "name": name,
        "observation_type": type(obs).__name__,
        "text": text_of(obs),
        "is_error": is_error(obs),
        "reward": value.reward,
        "done": value.done,
    }
