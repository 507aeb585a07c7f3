"""In-process Wordle: an omnienv step against the raw calls it wraps.

All sides replay the same solved games (guesses computed beforehand, so the solver is not
measured):

- game rules: ``WordleGame.guess``, the bare rules (no message for the player);
- tool method: ``Wordle.guess`` called directly, the author's code (rules plus the message);
- author's code: the tool method plus, once per game, the rubric's reward functions called
  directly: everything of the environment's own that a step runs;
- omnienv: ``Wordle.step`` with a prebuilt ``ToolCall``, which adds argument validation, turn
  accounting, the result objects and, on the last guess, the rubric's final reward.

Target: omnienv step <= 1.3x the tool method. One table: every ratio, the target and verdict on
the tool method's row, as the target says; the step against the author's code is the framework's
own cost.

    python benchmarks/inprocess.py [--games 400] [--repeats 7]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from omnienv.core import ToolCall
from omnienv.envs.wordle import Wordle, WordleGame, accepted_words
from omnienv.envs.wordle.env import partial_credit, solved
from omnienv.envs.wordle.solver import next_guess

TARGET = 1.3


Games = list[tuple[str, str, list[str]]]
"""(task id, answer, the solver's guesses) of each game."""


def solved_games(count: int) -> Games:
    games = []
    for task in Wordle.tasks("test")[:count]:
        history: list[tuple[str, str]] = []
        game = WordleGame(task.answer, accepted_words())
        while not game.over:
            guess = next_guess(history)
            history.append((guess, game.guess(guess)))
        games.append((task.id, task.answer, [g for g, _ in history]))
    return games


def time_episodes(
    games: Games,
    begin: Callable[[str, str], Any],
    play: Callable[[Any, list[Any]], None],
    moves: Callable[[list[str]], list[Any]],
) -> tuple[float, float]:
    """Nanoseconds spent in all the steps and in all the resets: ``begin(task_id, answer)`` starts
    a game, ``play(game, moves)`` makes every move of it (prepared by ``moves`` beforehand)."""
    prepared = [(task_id, answer, moves(words)) for task_id, answer, words in games]
    step_ns = reset_ns = 0
    for task_id, answer, episode in prepared:
        t0 = time.perf_counter_ns()
        game = begin(task_id, answer)
        t1 = time.perf_counter_ns()
        play(game, episode)
        t2 = time.perf_counter_ns()
        reset_ns += t1 - t0
        step_ns += t2 - t1
    return step_ns, reset_ns


def time_raw(games: Games) -> tuple[float, float]:
    vocabulary = accepted_words()

    def play(game: WordleGame, words: list[str]) -> None:
        for word in words:
            game.guess(word)

    return time_episodes(games, lambda _, answer: WordleGame(answer, vocabulary), play, list)


def _reset(env: Wordle) -> Callable[[str, str], Wordle]:
    def begin(task_id: str, _: str) -> Wordle:
        env.reset(task=task_id)
        return env

    return begin


def time_omnienv(games: Games) -> tuple[float, float]:
    def play(env: Wordle, calls: list[ToolCall]) -> None:
        for call in calls:
            env.step(call)

    return time_episodes(games, _reset(Wordle()), play, lambda words: [ToolCall("guess", {"word": w}) for w in words])


def time_tool_method(games: Games) -> tuple[float, float]:
    def play(env: Wordle, words: list[str]) -> None:
        for word in words:
            env.guess(word)

    return time_episodes(games, _reset(Wordle()), play, list)


def time_authors_code(games: Games) -> tuple[float, float]:
    def play(env: Wordle, words: list[str]) -> None:
        for word in words:
            env.guess(word)
        solved(env)
        partial_credit(env)

    return time_episodes(games, _reset(Wordle()), play, list)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    games = solved_games(args.games)
    steps = sum(len(words) for _, _, words in games)
    best: dict[str, tuple[float, float]] = {}
    gc.disable()
    try:
        for _ in range(args.repeats):  # interleaved, best of N: the least disturbed run of each
            for name, fn in (
                ("raw", time_raw),
                ("tool", time_tool_method),
                ("author", time_authors_code),
                ("omnienv", time_omnienv),
            ):
                step_ns, reset_ns = fn(games)
                old = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(old[0], step_ns), min(old[1], reset_ns))
    finally:
        gc.enable()
    per_step = {name: best[name][0] / steps for name in best}
    omni = per_step["omnienv"]
    table = Table(
        "omnienv step against",
        "reference step (µs)",
        "omnienv step (µs)",
        "ratio",
        "target",
        "verdict",
        title=f"in-process Wordle: {len(games)} games, {steps} steps, best of {args.repeats}",
    )
    for name, label, target in (
        ("raw", "game rules (WordleGame.guess)", None),
        ("tool", "tool method (Wordle.guess)", TARGET),
        ("author", "author's code (tool method + reward functions)", None),
    ):
        ratio = omni / per_step[name]
        if target is None:
            said, verdict = "", "reported"
        else:
            said, verdict = f"<= {target:g}x", "[green]met" if ratio <= target else "[red]missed"
        table.add_row(label, f"{per_step[name] / 1e3:.2f}", f"{omni / 1e3:.2f}", f"{ratio:.2f}x", said, verdict)
    reset = best["omnienv"][1] / len(games) / 1e3
    table.add_row("(reset: task by id, game set-up)", "", f"{reset:.2f}", "", "", "reported")
    Console().print(table)


if __name__ == "__main__":
    main()
