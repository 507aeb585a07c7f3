"""Run in Inspect AI's virtualenv: samples that Inspect's own limits stop, through its ``eval()``.

The environment is :class:`Stalling`: ``tick`` pays 0.5, ``stall`` never returns, and the rubric
pays 1 for any episode. Inspect's mockllm model calls one tool over and over. A message limit
stops the loop between two calls, a time limit cancels it inside ``stall``; either way Inspect
scores the sample as it stands, so the episode must come back cut short and scored (never left
unscored, which means void), and its environment closed: ``teardown`` awaits a thread before it
records the close, as a kernel's or a display's does, so a cancelled teardown records nothing.
Prints one JSON line per limit.
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from omnienv.core import AsyncEnvironment, Rubric, Task, ToolResult, tool
from omnienv.dialects.inspect_eval import environment_task

EVENTS: list[str] = []


def played(env: Stalling) -> float:
    """1 for any episode: proof that the rubric ran."""
    return 1.0


class Stalling(AsyncEnvironment):
    """Tick for 0.5 a call, or stall until the sample is cancelled."""

    max_turns = 50
    splits = ("test",)
    rubric = Rubric(played)

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return [Task("test/0", "test")]

    async def setup(self, task: Task | None, rng: random.Random) -> str:
        EVENTS.append("setup")
        return "Tick."

    async def teardown(self) -> None:
        await asyncio.to_thread(lambda: None)  # what releasing a sandbox awaits
        EVENTS.append("closed")

    @tool
    async def tick(self) -> ToolResult:
        """Tick once."""
        return ToolResult.of("tock", reward=0.5)

    @tool
    async def stall(self) -> str:
        """Wait for ever."""
        await asyncio.Event().wait()
        return "never"


def outputs(name: str, count: int) -> list[ModelOutput]:
    found = []
    for _ in range(count):
        output = ModelOutput.for_tool_call("mockllm/model", name, {})
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tokenizer download
        found.append(output)
    return found


def run(kind: str, tool_name: str, **limits: Any) -> dict[str, Any]:
    EVENTS.clear()
    model = get_model("mockllm/model", custom_outputs=outputs(tool_name, 20))
    with tempfile.TemporaryDirectory() as log_dir:
        [log] = inspect_eval(
            environment_task(Stalling), model=model, display="none", log_dir=log_dir, fail_on_error=False, **limits
        )
        [sample] = log.samples or []
        score = (sample.scores or {}).get("_episode_reward")
        return {
            "kind": kind,
            "status": log.status,
            "limit": sample.limit.type if sample.limit else None,
            "error": sample.error.message if sample.error else None,
            "score": None if score is None else score.value,
            "outcome": None if score is None else score.metadata,
            "events": list(EVENTS),
        }


def main() -> None:
    print(json.dumps(run("messages", "tick", message_limit=4)), flush=True)
    print(json.dumps(run("time", "stall", time_limit=1)), flush=True)


if __name__ == "__main__":
    main()
