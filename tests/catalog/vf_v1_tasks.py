"""A tiny Verifiers v1 taskset (``verifiers.v1``): arithmetic with a calculator toolset.

Loaded by tests/catalog/verifiers_checks.py inside the verifiers 0.4.0 virtualenv as
``verifiers/tests.catalog.vf_v1_tasks``. Built in memory, nothing from the Hub. The toolset is an
MCP server (verifiers runs it in a process of its own; omnienv in-process) sharing the rollout's
state, which a metric reads. Config (``--args``): ``{"task": {"tools": false}}`` makes it
single-turn (no toolset: the reply is the answer); ``{"broken": true}`` gives its tasks a reward
function that raises.
"""

from __future__ import annotations

from collections.abc import Iterator

import verifiers.v1 as vf

PAIRS = [(2, 3), (40, 2), (7, 8)]


class SumData(vf.TaskData):
    answer: int
    broken: bool = False


class SumState(vf.State):
    calls: int = 0


class SumTaskConfig(vf.TaskConfig):
    tools: bool = True


class Calculator(vf.Toolset[vf.ToolsetConfig, SumState]):
    TOOL_PREFIX = None

    @vf.tool
    async def add(self, a: int, b: int) -> str:
        """Add two non-negative integers.

        Args:
            a: The first number.
            b: The second number.
        """
        if a < 0 or b < 0:
            raise ValueError("add takes non-negative numbers only")
        self.state.calls += 1
        return str(a + b)


class SumTask(vf.Task[SumData, SumState, SumTaskConfig]):
    @classmethod
    def toolsets(cls, config: SumTaskConfig) -> list[vf.Toolset]:
        return [Calculator(vf.ToolsetConfig())] if config.tools else []

    @vf.reward(weight=1.0)
    async def correct(self, task: SumData, trace: vf.Trace) -> float:
        if task.broken:
            raise ZeroDivisionError("the judge divided by zero")
        return 1.0 if str(task.answer) in trace.last_reply else 0.0

    @vf.metric
    async def tool_calls(self, trace: vf.Trace) -> float:
        return float(trace.state.calls)


class SumConfig(vf.TasksetConfig):
    task: SumTaskConfig = SumTaskConfig()
    broken: bool = False


class SumTaskset(vf.Taskset[SumTask, SumConfig]):
    def load(self) -> Iterator[SumTask]:
        for a, b in PAIRS:
            prompt = f"Compute {a} + {b} and reply with the number."
            yield SumTask(SumData(prompt=prompt, answer=a + b, broken=self.config.broken), self.config.task)


__all__ = ["SumTaskset"]
