"""Run in gem-llm's virtualenv: play Wordle through gem.make and gem.make_vec, report JSON lines."""

from __future__ import annotations

import json
import math

import gem
from PIL import Image

from omnienv.dialects.gem import GemEnv, register
from omnienv.envs.wordle.solver import next_guess, read_marks
from tests.dialects.envs import Counter, Snapshot


def main() -> None:
    env_id = register("wordle")
    assert register("wordle") == env_id  # idempotent

    env = gem.make(env_id)
    observation, info = env.reset(seed=0)
    first = (observation, info["task_id"])
    history: list[tuple[str, str]] = []
    rewards, flags = [], (False, False)
    while not any(flags):
        call = {"name": "guess", "arguments": {"word": next_guess(history)}}
        observation, reward, terminated, truncated, info = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
        rewards.append(reward)
        flags = (terminated, truncated)
        history.append(read_marks(observation))
    again = env.reset(seed=0)
    print(
        json.dumps(
            {
                "kind": "make",
                "is_gem_env": isinstance(env, gem.Env),
                "env_id": env.env_id,
                "rewards": rewards,
                "flags": flags,
                "success": info.get("success"),
                "suffix": info["suffix"],
                "reset_repeats": [again[0], again[1]["task_id"]] == list(first),
                "tools_listed": "<tools>" in first[0],
                "random_action": env.sample_random_action(),
            }
        )
    )

    vec = gem.make_vec([env_id] * 2, seed=3)
    observations, _ = vec.reset()
    histories: list[list[tuple[str, str]]] = [[], []]
    totals, finished = [0.0, 0.0], [False, False]
    for _ in range(12):
        observations, step_rewards, terminations, truncations, _ = vec.step(
            [f"<guess>{next_guess(h)}</guess>" for h in histories]
        )
        for i in range(2):
            if finished[i]:
                continue
            totals[i] += float(step_rewards[i])
            finished[i] = bool(terminations[i] or truncations[i])
            if not finished[i]:
                histories[i].append(read_marks(observations[i]))
        if all(finished):
            break
    print(json.dumps({"kind": "make_vec", "totals": totals, "finished": finished, "seeds": [e.seed for e in vec.envs]}))

    spawned = env.spawn()
    print(
        json.dumps(
            {
                "kind": "spawn",
                "type": type(spawned).__name__,
                "fresh": spawned is not env,
                "resets": isinstance(spawned.reset()[0], str),
            }
        )
    )

    crash = GemEnv(Counter)
    crash.reset(seed=1)
    observation, reward, terminated, truncated, info = crash.step("<add>-1</add>")
    print(
        json.dumps(
            {
                "kind": "failure",
                "reward_is_nan": isinstance(reward, float) and math.isnan(reward),
                "terminated": terminated,
                "truncated": truncated,
                "failure": info.get("failure"),
            }
        )
    )

    viewer = GemEnv(Snapshot)
    first, _ = viewer.reset(seed=0)
    seen, *_ = viewer.step('<tool_call>{"name": "look", "arguments": {}}</tool_call>')
    shown = seen if isinstance(seen, dict) else {"text": seen, "images": []}
    pictures = shown["images"]
    print(
        json.dumps(
            {
                "kind": "image",
                "prompt_is_text": isinstance(first, str),
                "keys": sorted(seen) if isinstance(seen, dict) else "text only",
                "text": shown["text"],
                "images": [[im.mode, list(im.size)] for im in pictures],
                "pil": bool(pictures) and all(isinstance(im, Image.Image) for im in pictures),
            }
        )
    )


if __name__ == "__main__":
    main()
