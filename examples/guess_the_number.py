"""Write an environment in 30 lines, check it, and play it with a scripted policy.

python examples/guess_the_number.py
"""

from __future__ import annotations

import random

from omnienv import Environment, Rubric, Task, ToolCall, ToolResult, check_env, tool


def found_it(env: GuessTheNumber) -> float:
    """1 for finding the number, less for every extra guess."""
    return max(0.0, 1.0 - 0.1 * (env.guesses - 1)) if env.found else 0.0


class GuessTheNumber(Environment):
    """Find a secret number between 1 and 100; each guess tells you higher or lower."""

    splits = ("train", "test")
    max_turns = 10
    rubric = Rubric(found_it)

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        numbers = range(1, 101, 2) if split == "train" else range(2, 101, 2)
        return [Task(f"{split}/{i}", split, answer=n) for i, n in enumerate(numbers)]

    def setup(self, task: Task | None, rng: random.Random) -> str:
        self.secret = task.answer if task else rng.randint(1, 100)
        self.guesses, self.found = 0, False
        return "I'm thinking of a number from 1 to 100. Call `guess` to find it."

    @tool
    def guess(self, number: int) -> ToolResult:
        """Guess the number.

        Args:
            number: An integer from 1 to 100.
        """
        self.guesses += 1
        self.found = number == self.secret
        hint = "Correct!" if self.found else ("Higher." if number < self.secret else "Lower.")
        return ToolResult.of(hint, done=self.found)


def bisect(env: GuessTheNumber) -> float:
    """A scripted policy that plays through the public API only: reset, step, observations."""
    low, high = 1, 100
    env.reset(task="test/7")
    while True:
        middle = (low + high) // 2
        result = env.step(ToolCall("guess", {"number": middle}))
        if result.over:
            return env.episode_reward
        low, high = (middle + 1, high) if result.observation.text == "Higher." else (low, middle - 1)


if __name__ == "__main__":
    check_env(GuessTheNumber).raise_for_failures()
    print("contract checks passed")
    print(f"bisection found the number; episode reward {bisect(GuessTheNumber()):.2f}")
