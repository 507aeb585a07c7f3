"""Gymnasium (the main virtualenv's own package): ``gymnasium.make`` on each matrix environment.

The desktop's observations are Gymnasium's dict of text and ``HxWx3`` uint8 arrays; each array is
re-encoded as a PNG for the report, so its size is what the agent's pixels really are.
"""

from __future__ import annotations

import io
from typing import Any

import gymnasium
import numpy as np
from PIL import Image

from omnienv.dialects.gymnasium import register
from tests.matrix.cells import CELLS, Player, cell_report, crash_report, image_report, tool_call_text


def _png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def _read(observation: Any, images: list[dict[str, Any]]) -> str:
    """The observation's text; its images, if any, go to the report as pixel arrays."""
    if isinstance(observation, str):
        return observation
    for pixels in observation["images"]:
        assert isinstance(pixels, np.ndarray) and pixels.dtype == np.uint8 and pixels.shape[2] == 3, pixels
        images.append(image_report("HxWx3 uint8 array", _png(pixels)))
    return str(observation["text"])


def play(env: str) -> dict[str, Any]:
    cell = CELLS[env]
    env_id = register(cell.spec, f"matrix/{env}-v0")
    game = gymnasium.make(env_id)
    images: list[dict[str, Any]] = []
    texts: list[str] = []
    try:
        observation, info = game.reset(seed=0, options={"task": cell.task_id})
        prompt = _read(observation, images)
        assert observation in game.observation_space, "the reset observation is outside the declared space"
        seen: list[Any] = [prompt, info]
        player = Player(cell, prompt)
        rewards: list[float] = []
        terminated = truncated = False
        while not (terminated or truncated):
            call = player.act()
            observation, reward, terminated, truncated, info = game.step(tool_call_text(call))
            assert observation in game.observation_space, "a step's observation is outside the declared space"
            text = _read(observation, images)
            rewards.append(float(reward))
            seen.append(info)
            texts.append(text)
            player.saw(call, text)
        done = terminated
        observation, info = game.reset(seed=1, options={"task": cell.task_id})
        seen += [_read(observation, images), info]
        _, reward, terminated, truncated, info = game.step(tool_call_text(cell.crash))
        seen.append(info)
        crash = crash_report(reward, "reward=nan, info['failure']", "failure" in info and (terminated or truncated))
    finally:
        game.close()
    return cell_report(
        env, rewards=rewards, total=sum(rewards), done=done, crash=crash, seen=seen, texts=texts, images=images
    )


def collect() -> dict[str, dict[str, Any]]:
    return {env: play(env) for env in CELLS}
