"""Checks of one catalog source, run inside that source library's own virtualenv.

``python tests/catalog/peer_checks.py [reasoning-gym|gem|textarena]`` prints JSON lines that
tests/peers/test_catalog_*.py read: the manifest against the live library, a sample of the
source's environments through the contract checker, scripted episodes that score what they
should, one episode over ``/ws`` from a real server on 127.0.0.1, and one through an in-process
dialect (Gymnasium's API for reasoning-gym and TextArena, GEM's own ``gem.make`` for GEM).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from omnienv.catalog.build import check_source
from omnienv.core import ToolCall, check_env, load_environment

SAMPLES = {
    "reasoning-gym": [
        "reasoning-gym/leg_counting",
        "reasoning-gym/basic_arithmetic",
        "reasoning-gym/spell_backward",
        "reasoning-gym/word_sorting",
        "reasoning-gym/gcd",
    ],
    "gem": [
        "gem/game:GuessTheNumber-v0-easy",
        "gem/game:Mastermind-v0-easy",
        "gem/game:TowerofHanoi-v0-easy",
        "gem/game:Sudoku-v0-easy",
        "gem/rg:leg_counting",
    ],
    "textarena": [
        "textarena/GuessTheNumber-v0",
        "textarena/TowerOfHanoi-v0",
        "textarena/Mastermind-v0",
        "textarena/Sudoku-v0-easy",
        "textarena/Blackjack-v0",
    ],
}
BISECTION = {
    "gem": ("\\boxed{{{}}}", "higher than {}", "lower than {}"),
    "textarena": ("[{}]", "is higher", "is lower"),
}
"""How each source's number-guessing game takes a guess and hints: the move, 'higher', 'lower'."""


def emit(kind: str, **fields: Any) -> None:
    print(json.dumps({"kind": kind, **fields}), flush=True)


def check_sample(source: str) -> None:
    for name in SAMPLES[source]:
        report = check_env(load_environment(name))
        emit("check", name=name, ok=report.ok, failures=[f"{r.name}: {r.message}" for r in report.failures])


def score_answers() -> None:
    """reasoning-gym: each item's own answer scores 1 through the tool, a wrong one 0."""
    for name in SAMPLES["reasoning-gym"]:
        env = load_environment(name)()
        scores = []
        for answer in ("right", "wrong"):
            env.reset(task="test/00007")
            given = env._item["answer"] if answer == "right" else "zzz-not-the-answer"  # type: ignore[attr-defined]
            result = env.step(ToolCall("answer", {"answer": str(given)}))
            scores.append([result.reward, result.done, result.failure is None])
        emit("score", name=name, scores=scores)


def guess_the_number(step: Any, prompt: str, source: str = "gem") -> tuple[float, bool]:
    """Binary search on GuessTheNumber (GEM's or TextArena's) by its 'higher'/'lower' hints; the
    total reward and whether the game ended by its rules."""
    move, higher, lower = BISECTION[source]
    low, high = (int(n) for n in re.search(r"between (\d+) and (\d+)", prompt).groups())  # type: ignore[union-attr]
    total = 0.0
    for _ in range(10):
        guess = (low + high) // 2
        text, reward, done = step(move.format(guess))
        total += reward
        if done:
            return total, True
        if higher.format(guess) in text:
            low = guess + 1
        elif lower.format(guess) in text:
            high = guess - 1
    return total, False


def play_textarena() -> None:
    """TextArena: scripted episodes score what TextArena scores them, and end as it ends them.

    Tower of Hanoi solved in its 7 moves wins 1; two invalid moves in a row lose Mastermind with
    TextArena's partial score (0 here: no guess yet); guessing upwards from 1 runs GuessTheNumber
    into its turn limit, which is truncation, with TextArena's closeness score.
    """
    episodes = {
        "textarena/TowerOfHanoi-v0": ["[A C]", "[A B]", "[C B]", "[A C]", "[B A]", "[B C]", "[A C]"],
        "textarena/Mastermind-v0": ["no guess", "still none"],
        "textarena/GuessTheNumber-v0": [f"[{n}]" for n in range(1, 21)],
    }
    for name, moves in episodes.items():
        env = load_environment(name)()
        env.reset(task="test/00003")
        for move in moves:
            result = env.step(ToolCall("act", {"action": move}))
            if result.over:
                break
        steps, text = env.state().step_count, result.observation.text
        emit("episode", name=name, moves=steps, reward=result.reward, over=[result.done, result.truncated], text=text)


def over_ws(source: str) -> None:
    from omnienv.app import create_app
    from omnienv.client import WebSocketClient
    from omnienv.server import running

    name = SAMPLES[source][0]
    with running(create_app(name)) as url, WebSocketClient(url) as env:
        prompt = env.reset(task="test/00003").text
        tools = sorted(env.tools) if hasattr(env, "tools") else []
        if source == "reasoning-gym":
            # the library's own item 3 of the test split (seeds from 1_000_000): what the server served
            import reasoning_gym

            item = reasoning_gym.create_dataset(name.split("/")[1], seed=1_000_000, size=200)[3]
            result = env.step(ToolCall("answer", {"answer": str(item["answer"])}))
            same = prompt == item["question"]
            emit("ws", name=name, prompt=same, tools=tools, reward=result.reward, done=result.done)
            return

        def step(text: str) -> tuple[str, float, bool]:
            result = env.step(ToolCall("act", {"action": text}))
            return result.observation.text, result.reward, result.done

        total, done = guess_the_number(step, prompt, source)
        emit("ws", name=name, prompt=bool(prompt), tools=tools, reward=total, done=done)


def in_dialect(source: str) -> None:
    name = SAMPLES[source][0]
    if source == "textarena":
        from omnienv.dialects.gymnasium import GymnasiumEnv

        gym_env = GymnasiumEnv(name)
        obs, _ = gym_env.reset(seed=5)
        over = [False, False]

        def act(text: str) -> tuple[str, float, bool]:
            observation, reward, terminated, truncated, _ = gym_env.step(f"<act>{text}</act>")
            over[:] = [terminated, truncated]
            return str(observation), float(reward), bool(terminated)

        total, _ = guess_the_number(act, str(obs), source)
        emit("dialect", name=name, api="gymnasium", prompt=bool(obs), reward=total, over=over)
        gym_env.close()
        return
    if source == "reasoning-gym":
        from omnienv.dialects.gymnasium import GymnasiumEnv

        gym_env = GymnasiumEnv(name)
        obs, _ = gym_env.reset(seed=5)
        answer = gym_env.session.env._item["answer"]  # type: ignore[union-attr]
        _, reward, terminated, truncated, _ = gym_env.step(f"<answer>{answer}</answer>")
        emit("dialect", name=name, api="gymnasium", prompt=bool(obs), reward=reward, over=[terminated, truncated])
        gym_env.close()
        return
    import gem

    from omnienv.dialects.gem import register

    gem_env = gem.make(register(name))
    obs, _ = gem_env.reset(seed=5)

    def step(text: str) -> tuple[str, float, bool]:
        observation, reward, terminated, _, _ = gem_env.step(f"<act>{text}</act>")
        return str(observation), float(reward), bool(terminated)

    total, done = guess_the_number(step, str(obs))
    emit("dialect", name=name, api="gem", prompt=bool(obs), reward=total, over=[done, False])


def main(source: str) -> None:
    emit("manifest", problems=check_source(source))
    check_sample(source)
    if source == "reasoning-gym":
        score_answers()
    if source == "textarena":
        play_textarena()
    over_ws(source)
    in_dialect(source)


def default_source() -> str:
    """GEM where gem-llm is installed (its virtualenv holds an older reasoning-gym too), else
    TextArena where it is, else reasoning-gym."""
    import importlib.util

    for source, module in (("gem", "gem"), ("textarena", "textarena")):
        if importlib.util.find_spec(module) is not None:
            return source
    return "reasoning-gym"


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else default_source())
