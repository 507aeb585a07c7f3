"""Run in skyrl-gym's virtualenv: each matrix environment as SkyRL's generator builds it, one report each.

The generator's way: a dataset row from :func:`omnienv.dialects.skyrl_gym.dataset_rows`, every
column but ``prompt`` passed to ``skyrl_gym.make(env_class, env_config=, extras=)``, ``init`` with
the row's prompt, then ``step`` with the model's text until ``done``. Every row built is part of
what the agent's trainer shows it, so all of them are searched for the answer.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv

from omnienv.dialects.skyrl_gym import dataset_rows, register
from tests.matrix.cells import CELLS, Player, cell_report, crash_report, image_report, print_report, tool_call_text

_DATA_URL = re.compile(r"^data:image/[a-z]+;base64,(.+)$", re.S)


def read(content: Any, images: list[dict[str, Any]]) -> str:
    """A message's text; its ``image_url`` parts, if any, go to the report."""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if part["type"] == "text":
            texts.append(part["text"])
        elif part["type"] == "image_url":
            found = _DATA_URL.match(part["image_url"]["url"])
            assert found, f"an image part that is no data URL: {part['image_url']['url'][:80]}"
            images.append(image_report("image_url part", base64.b64decode(found.group(1))))
        else:
            raise AssertionError(f"an unexpected content part: {part['type']}")
    return "\n".join(texts)


def build(row: dict[str, Any]) -> BaseTextEnv:
    extras = {key: value for key, value in row.items() if key != "prompt"}
    env = skyrl_gym.make(row["env_class"], env_config={}, extras=extras)
    assert isinstance(env, BaseTextEnv)
    return env


def play(env: str) -> dict[str, Any]:
    cell = CELLS[env]
    env_id = register(cell.spec, f"matrix-{env}")
    rows = dataset_rows(cell.spec, "test", env_id)
    (row,) = [row for row in rows if row["extra_info"]["task_id"] == cell.task_id]
    images: list[dict[str, Any]] = []
    texts: list[str] = []
    seen: list[Any] = list(rows)
    game = build(row)
    try:
        conversation, meta = game.init(row["prompt"])
        prompt = "\n".join(read(message["content"], images) for message in conversation)
        seen += [prompt, meta]
        player = Player(cell, prompt)
        rewards: list[float] = []
        out: dict[str, Any] = {"done": False}
        while not out["done"]:
            call = player.act()
            out = game.step(tool_call_text(call))
            rewards.append(float(out["reward"]))
            seen.append(out["metadata"])
            text = "\n".join(read(message["content"], images) for message in out["observations"])
            texts.append(text)
            player.saw(call, text)
        done = bool(out["done"])
        seen.append(game.get_metrics())
    finally:
        game.close()
    crashing = build(row)
    try:
        conversation, meta = crashing.init(row["prompt"])
        seen.append(meta)
        out = crashing.step(tool_call_text(cell.crash))
        metrics = crashing.get_metrics()
        seen += [out["metadata"], metrics]
        flagged = "failure" in out["metadata"] and metrics["failure"] == 1.0
        crash = crash_report(out["reward"], "reward=None, metadata['failure']", out["done"] and flagged)
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
