"""Wordle in GEM: ``gem.make`` and ``gem.make_vec`` play it to a win with the solver's text.

.venvs/gem/bin/python examples/gem_wordle.py          # gem-llm needs Python <= 3.12
"""

from __future__ import annotations

import gem

from omnienv.dialects.gem import register
from omnienv.envs.wordle.solver import next_guess, read_marks


def main() -> None:
    env_id = register("wordle")  # "omnienv:wordle"

    env = gem.make(env_id)
    observation, _ = env.reset(seed=0)  # the tool instructions, then Wordle's prompt
    history: list[tuple[str, str]] = []
    total, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        observation, reward, terminated, truncated, _ = env.step(f"<guess>{next_guess(history)}</guess>")
        total += reward
        if marks := read_marks(observation):
            history.append(marks)
    print(f"gem.make: {observation!r}, reward {total:.3f}")

    vec = gem.make_vec([env_id] * 2, seed=10)  # each copy gets its own seed
    observations, _ = vec.reset()
    histories: list[list[tuple[str, str]]] = [[], []]
    totals, finished = [0.0, 0.0], [False, False]
    while not all(finished):
        actions = [f"<guess>{next_guess(h)}</guess>" for h in histories]
        observations, rewards, terminations, truncations, _ = vec.step(actions)  # finished copies auto-reset
        for i in range(2):
            if finished[i]:
                continue
            totals[i] += float(rewards[i])
            finished[i] = bool(terminations[i] or truncations[i])
            if not finished[i] and (marks := read_marks(observations[i])):
                histories[i].append(marks)
    print(f"gem.make_vec: rewards {[round(t, 3) for t in totals]}")


if __name__ == "__main__":
    main()
