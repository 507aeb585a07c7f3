"""Wordle as a Gymnasium environment: checked by Gymnasium's own checker, then played to a win.

Actions are the model's text; here the scripted solver writes them, Hermes-style::

    python examples/gymnasium_wordle.py          # needs the `gymnasium` extra
"""

from __future__ import annotations

import json

import gymnasium
from gymnasium.utils.env_checker import check_env

from omnienv.dialects.gymnasium import register
from omnienv.envs.wordle.solver import next_guess, read_marks


def main() -> None:
    env_id = register("wordle")  # "omnienv/wordle-v0"
    env = gymnasium.make(env_id, render_mode="ansi")
    check_env(env.unwrapped, skip_render_check=True)
    print(f"{env_id}: gymnasium's env checker passed")

    for seed in range(3):
        observation, info = env.reset(seed=seed)  # info["system_prompt"] lists the tools for a model
        history: list[tuple[str, str]] = []
        total, done = 0.0, False
        while not done:
            call = {"name": "guess", "arguments": {"word": next_guess(history)}}
            action = f"<tool_call>{json.dumps(call)}</tool_call>"
            observation, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            done = terminated or truncated
            if marks := read_marks(observation):
                history.append(marks)
        outcome = "won" if info.get("success") else "lost"
        print(f"seed {seed}: {outcome} in {len(history)} guesses, reward {total:.3f}")
    print(env.render().splitlines()[-1])
    env.close()


if __name__ == "__main__":
    main()
