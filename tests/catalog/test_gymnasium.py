"""Gymnasium's toy-text environments from the catalog: checked, played over /ws and in-process.

CliffWalking is deterministic, so its shortest safe path (up, eleven times right, down) is a
scripted win worth exactly -13 wherever it is played.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from typer.testing import CliRunner

from omnienv.catalog import entries, find
from omnienv.catalog.gymnasium_text import environment
from omnienv.cli.main import app
from omnienv.client import WebSocketClient
from omnienv.core import ToolCall, check_env, load_environment
from omnienv.dialects.gymnasium import GymnasiumEnv

CLIFF = "gymnasium/CliffWalking-v1"
SAFE_PATH = ["up"] + ["right"] * 11 + ["down"]


@pytest.mark.parametrize("name", [entry.name for entry in entries("gymnasium")])
def test_every_toy_text_environment_passes_the_checker(name: str) -> None:
    report = check_env(load_environment(name))
    assert report.ok, report.failures


def test_omnienv_check_takes_a_catalog_name() -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["check", "gymnasium/FrozenLake-v1"])
    assert result.exit_code == 0, result.output
    assert "all checks passed" in result.output


def test_cliff_walking_over_ws(serve: Any) -> None:
    served = serve(CLIFF)
    with WebSocketClient(served.url) as env:
        prompt = env.reset(task="test/00000")
        assert "P" in prompt.text and "C" in prompt.text
        wrong = env.step(ToolCall("move", {"direction": "sideways"}))  # the Literal is checked: a mistake, no step
        assert wrong.observation.is_error and wrong.failure is None and "up" in wrong.observation.text
        results = [env.step(ToolCall("move", {"direction": step})) for step in SAFE_PATH]
        assert [r.done for r in results] == [False] * 12 + [True]  # the agent's mistake cost nothing
        assert sum(r.reward for r in results) == -13.0
        assert env.state().reward == -13.0


def test_cliff_walking_through_the_gymnasium_dialect() -> None:
    gym_env = GymnasiumEnv(CLIFF)
    obs, _ = gym_env.reset(seed=3)
    assert "cliff" in obs
    total, terminated = 0.0, False
    for step in SAFE_PATH:
        _, reward, terminated, truncated, _ = gym_env.step(f"<move>{step}</move>")
        total += float(reward)
        assert not truncated
    assert terminated and total == -13.0
    gym_env.close()


def test_blackjack_ends_on_stick_with_the_environments_reward() -> None:
    env = load_environment("gymnasium/Blackjack-v1")()
    prompt = env.reset(seed=1)
    assert "dealer shows" in prompt.text
    result = env.step(ToolCall("stick"))
    assert result.done and result.reward in (-1.0, 0.0, 1.0)


def test_a_time_limit_is_truncation_not_an_ending() -> None:
    """Taxi's TimeLimit (200 steps) truncates; with the contract's own limit set higher, only
    Gymnasium's flag can have ended the episode."""
    cls = environment(replace(find("gymnasium/Taxi-v4"), max_turns=500))
    env = cls()
    env.reset(seed=0)
    results = [env.step(ToolCall("pickup")) for _ in range(200)]  # an illegal pickup: -10, never done
    assert not any(r.truncated for r in results[:-1])
    assert results[-1].truncated and not results[-1].done and env.episode is not None and env.episode.over


class _Exploding:
    """A stand-in for the Gymnasium env whose step raises, as a buggy foreign env would."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.unwrapped = real.unwrapped

    def reset(self, seed: int) -> Any:
        return self.real.reset(seed=seed)

    def step(self, action: int) -> Any:
        raise RuntimeError("the foreign environment broke")

    def close(self) -> None:
        pass


def _exploding_class() -> type:
    base = load_environment("gymnasium/FrozenLake-v1")

    class Exploding(base):  # type: ignore[misc, valid-type]
        """FrozenLake whose Gymnasium step raises."""

        def setup(self, task: Any, rng: Any) -> str:
            prompt = super().setup(task, rng)
            self._gym = _Exploding(self._gym)
            return prompt

    return Exploding


def test_a_foreign_env_that_raises_is_a_flagged_failure() -> None:
    env = _exploding_class()()
    env.reset(seed=0)
    result = env.step(ToolCall("move", {"direction": "down"}))
    assert result.failure is not None and result.failure.kind == "env_error"
    assert "the foreign environment broke" in result.failure.message
    assert result.truncated and result.reward == 0.0


def test_a_foreign_failure_over_ws_is_flagged_and_the_server_goes_on(serve: Any) -> None:
    served = serve(_exploding_class())
    with WebSocketClient(served.url) as env:
        env.reset(seed=0)
        result = env.step(ToolCall("move", {"direction": "down"}))
        assert result.failure is not None and result.failure.kind == "env_error"
        assert env.state().reward is None  # masked, never a score
        assert env.reset(seed=1).text  # the same session starts the next episode
