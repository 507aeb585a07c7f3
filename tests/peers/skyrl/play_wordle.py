"""Run in skyrl-gym's virtualenv: play Wordle through skyrl_gym.make and report JSON lines."""

from __future__ import annotations

import base64
import json
import random

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv

from omnienv.core import ImageBlock, Task
from omnienv.dialects.skyrl_gym import SkyRLTextEnv, dataset_rows, register
from omnienv.envs.wordle.solver import next_guess, read_marks
from tests.dialects.envs import PNG, Counter, Snapshot


class Shown(Snapshot):
    """A prompt that shows the screen too."""

    def setup(self, task: Task | None, rng: random.Random) -> list[str | ImageBlock]:
        return ["Look at the screen.", ImageBlock(PNG)]


def play(row: dict) -> dict:
    extras = {key: value for key, value in row.items() if key != "prompt"}
    env = skyrl_gym.make(row["env_class"], env_config={}, extras={**extras, "max_turns": 12})
    conversation, meta = env.init(row["prompt"])
    history: list[tuple[str, str]] = []
    rewards = []
    out: dict = {"done": False}
    while not out["done"]:
        out = env.step(f"<guess>{next_guess(history)}</guess>")
        rewards.append(out["reward"])
        if out["observations"]:
            history.append(read_marks(out["observations"][0]["content"]))
    result = {
        "kind": "wordle",
        "meta": meta,
        "is_base_text_env": isinstance(env, BaseTextEnv),
        "rewards": rewards,
        "metadata": out["metadata"],
        "metrics": env.get_metrics(),
        "turns": env.turns,
        "system": conversation[0]["role"],
    }
    env.close()
    return result


def main() -> None:
    env_id = register("wordle")
    assert register("wordle") == env_id  # idempotent
    for row in dataset_rows("wordle", "test")[:2]:
        print(json.dumps(play(row)))
    # An empty prompt gets the tool instructions and the environment's prompt.
    env = skyrl_gym.make(env_id, env_config={}, extras={"extra_info": {"task_id": "test/0003"}})
    conversation, meta = env.init([])
    print(
        json.dumps(
            {
                "kind": "empty_prompt",
                "roles": [m["role"] for m in conversation],
                "meta": meta,
                "tools_listed": "<tools>" in conversation[0]["content"],
            }
        )
    )
    # An image a tool returns reaches the model as an image part of the observation.
    viewer = SkyRLTextEnv({}, {"max_turns": 3}, env=Snapshot)
    viewer.init([])
    seen = viewer.step('<tool_call>{"name": "look", "arguments": {}}</tool_call>')["observations"][0]["content"]
    parts = [part["type"] for part in seen] if isinstance(seen, list) else "text only"
    url = next((part["image_url"]["url"] for part in seen if part["type"] == "image_url"), "") if parts else ""
    print(json.dumps({"kind": "image", "parts": parts, "png": base64.b64decode(url.split(",", 1)[-1]) == PNG}))
    # So does an image in the prompt, when the environment writes the prompt (an empty one given).
    conversation, _ = SkyRLTextEnv({}, {}, env=Shown).init([])
    content = conversation[-1]["content"]
    prompt_parts = [part["type"] for part in content] if isinstance(content, list) else "text only"
    print(json.dumps({"kind": "prompt_image", "parts": prompt_parts}))
    # A crash ends the episode and is flagged, never scored.
    crash = SkyRLTextEnv({}, {"max_turns": 5}, env=Counter)
    crash.init([])
    out = crash.step("<add>-1</add>")
    print(
        json.dumps(
            {
                "kind": "failure",
                "done": out["done"],
                "reward": out["reward"],
                "failure": out["metadata"].get("failure"),
                "metrics": crash.get_metrics(),
            }
        )
    )
    # A reply without a call is an observation that teaches the format; max_turns truncates.
    limited = skyrl_gym.make(env_id, env_config={}, extras={"max_turns": 2})
    limited.init([])
    first, second = limited.step("hello"), limited.step("hello again")
    print(
        json.dumps(
            {
                "kind": "limit",
                "first": first["observations"][0]["content"],
                "first_done": first["done"],
                "second_done": second["done"],
            }
        )
    )


if __name__ == "__main__":
    main()
