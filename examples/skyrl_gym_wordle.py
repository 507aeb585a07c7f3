"""Wordle in SkyRL Gym: ``skyrl_gym.make`` builds it as SkyRL's trainer does, the solver wins.

SkyRL's generator calls ``make(env_class, env_config=..., extras=row)`` for every dataset row;
``dataset_rows`` writes those rows (prompt with the tool instructions, ``env_class``,
``extra_info`` with the task id). The model's replies are text; tags work::

    .venvs/skyrl/bin/python examples/skyrl_gym_wordle.py
"""

from __future__ import annotations

import skyrl_gym

from omnienv.dialects.skyrl_gym import dataset_rows, register
from omnienv.envs.wordle.solver import next_guess, read_marks


def main() -> None:
    env_id = register("wordle")  # "omnienv-wordle"
    for row in dataset_rows("wordle", "test")[:3]:
        extras = {key: value for key, value in row.items() if key != "prompt"}
        env = skyrl_gym.make(row["env_class"], env_config={}, extras={**extras, "max_turns": 12})
        conversation, _ = env.init(row["prompt"])
        history: list[tuple[str, str]] = []
        total, done = 0.0, False
        while not done:
            reply = f"<guess>{next_guess(history)}</guess>"
            out = env.step(reply)
            conversation += [{"role": "assistant", "content": reply}, *out["observations"]]
            total += out["reward"]
            done = out["done"]
            if out["observations"] and (marks := read_marks(out["observations"][0]["content"])):
                history.append(marks)
        print(
            f"{env_id} {row['extra_info']['task_id']}: success={out['metadata'].get('success')} "
            f"in {env.turns} turns, reward {total:.3f}, metrics {env.get_metrics()}"
        )
        env.close()


if __name__ == "__main__":
    main()
