"""Run in gem-llm's virtualenv: each matrix environment through ``gem.make``, one report per environment.

The environments run in this process, as GEM runs its own. A turn with images is GEM's visual
observation, ``{"text", "images": [PIL.Image, ...]}``; each image is re-encoded as a PNG for the
report, so its size is what the model's processor would get.
"""

from __future__ import annotations

import io
from typing import Any

import gem

from omnienv.dialects.gem import register
from tests.matrix.cells import CELLS, Player, cell_report, crash_report, image_report, print_report, tool_call_text


def read(observation: Any, images: list[dict[str, Any]]) -> str:
    """The observation's text; its images, if any, go to the report."""
    if isinstance(observation, str):
        return observation
    for picture in observation["images"]:
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG")
        images.append(image_report(f"PIL.Image {picture.mode}", buffer.getvalue()))
    return str(observation["text"])


def play(env: str) -> dict[str, Any]:
    cell = CELLS[env]
    env_id = register(cell.spec, f"matrix:{env}")
    images: list[dict[str, Any]] = []
    texts: list[str] = []
    game = gem.make(env_id, task=cell.task_id)
    try:
        assert isinstance(game, gem.Env) and game.env_id == env_id
        observation, info = game.reset(seed=0)
        prompt = read(observation, images)
        seen: list[Any] = [prompt, info]
        player = Player(cell, prompt)
        rewards: list[float] = []
        terminated = truncated = False
        while not (terminated or truncated):
            call = player.act()
            observation, reward, terminated, truncated, info = game.step(tool_call_text(call))
            text = read(observation, images)
            rewards.append(float(reward))
            seen.append(info)
            texts.append(text)
            player.saw(call, text)
        done = terminated
    finally:
        game.close()
    crashing = gem.make(env_id, task=cell.task_id)
    try:
        observation, info = crashing.reset(seed=1)
        seen += [read(observation, images), info]
        _, reward, terminated, truncated, info = crashing.step(tool_call_text(cell.crash))
        seen.append(info)
        crash = crash_report(reward, "reward=nan, info['failure']", "failure" in info and (terminated or truncated))
    finally:
        crashing.close()
    return cell_report(
        env, rewards=rewards, total=sum(rewards), done=done, crash=crash, seen=seen, texts=texts, images=images
    )


def main() -> None:
    for env in CELLS:
        print_report(play(env))


if __name__ == "__main__":
    main()
