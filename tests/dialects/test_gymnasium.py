"""The Gymnasium dialect, checked by Gymnasium's own env checker and played to a win."""

from __future__ import annotations

import io
import math
import random
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from PIL import Image

from omnienv.core import (
    EnvironmentFailure,
    EpisodeOverError,
    ImageBlock,
    InvalidTypeError,
    InvalidValueError,
    Task,
    ToolCall,
    UsageError,
)
from omnienv.dialects.gymnasium import AnyImage, AnyText, GymnasiumEnv, register
from omnienv.envs.wordle.solver import next_guess, read_marks
from tests.dialects.envs import Counter, Snapshot


def _png(width: int, height: int, color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


class Screen(Snapshot):
    """A screen that shows itself in the prompt too, and says so, as the desktop does."""

    shows_images = True

    def setup(self, task: Task | None, rng: random.Random) -> list[str | ImageBlock]:
        return ["Look at the screen.", ImageBlock(_png(3, 2, (255, 0, 0)))]


def test_gymnasium_env_checker_passes_on_wordle() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning is a failure, except the one about specs
        warnings.filterwarnings("ignore", message=".*not having a spec.*")
        check_env(GymnasiumEnv("wordle"))


def test_gymnasium_make_with_render_modes_passes_the_checker() -> None:
    env_id = register("wordle")
    assert env_id == "omnienv/wordle-v0"
    env = gymnasium.make(env_id, render_mode="ansi")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
    finally:
        env.close()


def test_the_solver_wins_through_text_actions() -> None:
    env = GymnasiumEnv("wordle", render_mode="ansi")
    observation, info = env.reset(seed=11, options={"task": "test/0003"})
    assert info["task_id"] == "test/0003" and "<tools>" in info["system_prompt"]
    assert [tool["function"]["name"] for tool in info["tools"]] == ["guess", "get_history"]
    history: list[tuple[str, str]] = []
    total = 0.0
    for _ in range(6):
        observation, reward, terminated, truncated, info = env.step(f"<guess>{next_guess(history)}</guess>")
        total += reward
        if terminated or truncated:
            break
        history.append(read_marks(observation))  # type: ignore[arg-type]
    assert terminated and not truncated and info["success"] is True
    assert total > 1.0 and info["rubric"]["solved"] == pytest.approx(total)
    assert "Correct!" in env.render()  # type: ignore[operator]


def test_seeded_resets_are_reproducible_and_seedless_ones_continue_the_stream() -> None:
    env = GymnasiumEnv("wordle")
    first = [env.reset(seed=5)[1]["task_id"], env.reset()[1]["task_id"]]
    again = [env.reset(seed=5)[1]["task_id"], env.reset()[1]["task_id"]]
    assert first == again and first[0] != first[1]


def test_dict_and_toolcall_actions_skip_parsing() -> None:
    env = GymnasiumEnv(Counter)
    env.reset(seed=0)
    assert env.step({"name": "add", "arguments": {"n": 1}})[0] == "total 1"
    observation, reward, terminated, _, info = env.step(ToolCall("add", {"n": 2}))
    assert (observation, terminated, info["rubric"]) == ("total 3", True, {"reached": 1.0})
    assert reward == pytest.approx(1.25)


@pytest.mark.parametrize("action", [{"arguments": {"n": 1}}, 7, ["add"]])
def test_malformed_structured_actions_name_the_expected_shapes(action: object) -> None:
    env = GymnasiumEnv(Counter)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="model's text, a ToolCall, or a mapping"):
        env.step(action)  # type: ignore[arg-type]


def test_infrastructure_failure_truncates_and_is_flagged() -> None:
    env = GymnasiumEnv(Counter)
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("<add>-1</add>")
    assert math.isnan(reward) and (terminated, truncated) == (False, True)  # no reward at all, never a 0
    assert info["failure"]["kind"] == "env_error" and "the counter broke" in info["failure"]["message"]
    assert "will not be scored" in observation


class Flaky(Counter):
    """A counter whose sandbox fails to start when ``broken`` is set."""

    broken = False

    def setup(self, task: Task | None, rng: random.Random) -> str:
        prompt = super().setup(task, rng)
        if self.broken:
            raise RuntimeError("the sandbox did not start")
        return prompt


def test_no_step_runs_after_a_reset_that_failed() -> None:
    env = gymnasium.make(register("tests.dialects.test_gymnasium:Flaky", "test/flaky-v0"))
    env.reset(seed=0)
    env.step("<add>1</add>")
    env.unwrapped.session.env.broken = True
    with pytest.raises(EnvironmentFailure, match="the sandbox did not start"):
        env.reset(seed=1)
    with pytest.raises(EpisodeOverError):  # not a step of the episode before, scored as if nothing happened
        env.step("<add>1</add>")
    env.unwrapped.session.env.broken = False
    env.reset(seed=2)
    assert env.step("<add>3</add>")[1:4] == (pytest.approx(1.25), True, False)
    env.close()


def test_images_reach_the_agent_as_pixel_arrays() -> None:
    env = GymnasiumEnv(Screen)
    assert isinstance(env.observation_space, spaces.Dict)
    observation, _ = env.reset(seed=0)
    assert observation in env.observation_space and observation["text"] == "Look at the screen."
    (prompt_image,) = observation["images"]
    assert prompt_image.shape == (2, 3, 3) and prompt_image.dtype == np.uint8
    assert prompt_image[0, 0].tolist() == [255, 0, 0]
    observation, *_ = env.step('<tool_call>{"name": "look", "arguments": {}}</tool_call>')
    assert observation in env.observation_space and observation["text"] == "a 1x1 screen"
    (screenshot,) = observation["images"]
    assert screenshot.shape == (1, 1, 3)  # the tool's 1x1 RGBA PNG, as RGB


def test_an_image_environment_passes_the_env_checker() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*not having a spec.*")
        check_env(GymnasiumEnv(Screen))


def test_text_only_environments_keep_plain_text_observations() -> None:
    env = GymnasiumEnv(Snapshot)  # images in a step, but the class does not say it shows them
    assert isinstance(env.observation_space, AnyText)
    env.reset(seed=0)
    assert env.step('<tool_call>{"name": "look", "arguments": {}}</tool_call>')[0] == "a 1x1 screen"


def test_image_space_holds_any_rgb_uint8_image() -> None:
    space = AnyImage()
    assert np.zeros((768, 1024, 3), np.uint8) in space and space.sample() in space
    assert np.zeros((4, 4, 4), np.uint8) not in space and np.zeros((4, 4, 3), np.float32) not in space
    assert np.zeros((4, 4), np.uint8) not in space and "pixels" not in space


def test_bad_render_mode_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match=r"\['ansi', 'human'\]"):
        GymnasiumEnv("wordle", render_mode="rgb_array")


def test_text_space_holds_any_unicode_up_to_its_length() -> None:
    space = AnyText(8)
    assert "🟩⬛ é" in space and "x" * 9 not in space and 3 not in space
    assert space.sample() in space


def test_example_runs_as_written() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "gymnasium_wordle.py"
    result = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "gymnasium's env checker passed" in result.stdout
    assert result.stdout.count(": won in ") == 3


@pytest.mark.parametrize("env", [None, 5])
def test_what_is_not_an_environment_is_refused_naming_what_is(env: object) -> None:
    with pytest.raises(InvalidTypeError) as caught:
        GymnasiumEnv(env)  # type: ignore[arg-type]
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, TypeError)
    assert "its class or its registered name (such as 'wordle')" in caught.value.message


def test_a_bad_render_mode_is_a_usage_error_and_still_a_value_error() -> None:
    with pytest.raises(InvalidValueError) as caught:
        GymnasiumEnv("wordle", render_mode="rgb_array")
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, ValueError)
