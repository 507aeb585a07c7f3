"""Run in the inspect-ai virtualenv: Inspect plays wrapped Wordle offline with its mockllm model.

The mock model's replies are the solver's guesses for the chosen tasks, computed up front (the
marks are deterministic), so a correct wrapper wins every sample; the first sample starts with a
word that is not in the list, which Inspect must record as the call's error. Prints the reward and
the tool errors of each sample.
"""

from __future__ import annotations

import sys

from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from omnienv.dialects.inspect_eval import environment_task
from omnienv.envs.wordle import Wordle, score_guess
from omnienv.envs.wordle.solver import next_guess

SAMPLES = 3
INVALID = "qqqqq"


def call(word: str) -> ModelOutput:
    output = ModelOutput.for_tool_call("mockllm/model", "guess", {"word": word})
    output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # no tokenizer download
    return output


def solver_outputs() -> list[ModelOutput]:
    outputs = [call(INVALID)]  # the first sample starts with a word that is not in the list
    for task in Wordle.tasks("test")[:SAMPLES]:
        history: list[tuple[str, str]] = []
        while not history or history[-1][0] != task.answer:
            guess = next_guess(history)
            history.append((guess, score_guess(guess, task.answer)))
            outputs.append(call(guess))
    return outputs


def main() -> int:
    model = get_model("mockllm/model", custom_outputs=solver_outputs())
    [log] = inspect_eval(
        environment_task("wordle", split="test", limit=SAMPLES),
        model=model,
        max_samples=1,
        display="none",
        log_dir=sys.argv[1],
    )
    assert log.status == "success", log.error
    for sample in log.samples or []:
        errors = [m.error.message for m in sample.messages if m.role == "tool" and m.error is not None]
        print(f"sample {sample.id} reward {sample.scores['_episode_reward'].value}")
        print(f"sample {sample.id} tool errors {errors!r}")
    print(f"mean {log.results.scores[0].metrics['mean'].value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
