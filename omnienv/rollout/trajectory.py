"""Episodes as records: what was asked, every call and result, rewards, timings, failure.

An :class:`Episode` is both what a policy reads while it plays (the live transcript) and what a
rollout writes, one JSON line per episode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from omnienv.core import EpisodeLedger, Failure, Observation, StepResult, ToolCall
from omnienv.core.text import valid_text

__all__ = ["TRAINER_END", "Episode", "Step", "valid_text"]

TRAINER_END = "end"
"""The call name of a last step that is no call of the agent's: its policy or harness stopped before
the episode was over, so the runner ended it (``env.end()``: truncated, the rubric scoring the state
reached), as every trainer does."""


@dataclass(slots=True)
class Step:
    call: ToolCall
    result: StepResult
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"call": self.call.to_dict(), **self.result.to_dict(), "seconds": round(self.seconds, 6)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        return cls(ToolCall.from_dict(data["call"]), StepResult.from_dict(data), float(data["seconds"]))


@dataclass(slots=True)
class Episode:
    env: str
    index: int
    task_id: str | None
    seed: int | None
    policy: str
    prompt: Observation | None = None
    steps: list[Step] = field(default_factory=list)
    failure: Failure | None = None
    seconds: float = 0.0
    stopped: str | None = None
    """Why the policy stopped acting before the episode ended, if it did."""
    usage: dict[str, int] = field(default_factory=dict)
    messages: list[dict[str, Any]] | None = None
    """The model conversation, for policies that hold one."""
    model_calls: list[dict[str, Any]] | None = None
    """The episode's model calls as a token recorder saw them (``omnienv eval --capture``): plain
    dicts, since rollout knows no recorder; written only when set, so other lines are unchanged."""

    @property
    def ledger(self) -> EpisodeLedger:
        """The episode's account, made from its steps by the one rule for reward, end and failure."""
        ledger = EpisodeLedger(seed=self.seed)
        for step in self.steps:
            ledger.record(step.result)
        if self.failure is not None:
            ledger.fail(self.failure)
        return ledger

    @property
    def reward(self) -> float:
        return self.ledger.reward

    @property
    def done(self) -> bool:
        return self.ledger.done

    @property
    def truncated(self) -> bool:
        return self.ledger.truncated

    @property
    def over(self) -> bool:
        return self.ledger.over

    @property
    def success(self) -> bool | None:
        """The environment's verdict (``info["success"]`` on the last step), when it gives one."""
        if not self.steps:
            return None
        verdict = self.steps[-1].result.info.get("success")
        return None if verdict is None else bool(verdict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "env": self.env,
            "index": self.index,
            "task_id": self.task_id,
            "seed": self.seed,
            "policy": self.policy,
            "prompt": self.prompt.to_dict() if self.prompt else None,
            "steps": [step.to_dict() for step in self.steps],
            "reward": None if self.failure else self.reward,  # a void episode has no reward to train on
            "done": self.done,
            "truncated": self.truncated,
            "success": self.success,
            "turns": len(self.steps),
            "stopped": self.stopped,
            "failure": self.failure.to_dict() if self.failure else None,
            "usage": self.usage,
            "seconds": round(self.seconds, 6),
            "messages": self.messages,
        }
        if self.model_calls is not None:
            data["model_calls"] = self.model_calls
        return data

    def to_line(self) -> bytes:
        """The episode as one JSON line, whatever it holds, so that one episode never stops a run.

        A lone surrogate (a model's reply, its tool call's arguments) is written as U+FFFD. Anything
        else JSON cannot hold (an environment's ``info`` holding an object) is written as its text,
        and the episode is flagged: its record is not what the environment returned."""
        data = self.to_dict()
        try:
            return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:
            pass
        try:
            return orjson.dumps(valid_text(data), option=orjson.OPT_APPEND_NEWLINE)
        except TypeError as exc:
            if self.failure is None:
                self.failure = Failure("record", f"the episode is not JSON ({exc}): what is not was written as text")
            data = valid_text(self.to_dict())
            return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE, default=lambda value: repr(value)[:200])

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Episode:
        prompt, failure = data.get("prompt"), data.get("failure")
        return cls(
            env=data["env"],
            index=int(data["index"]),
            task_id=data.get("task_id"),
            seed=data.get("seed"),
            policy=data["policy"],
            prompt=Observation.from_dict(prompt) if prompt else None,
            steps=[Step.from_dict(step) for step in data.get("steps", ())],
            failure=Failure.from_dict(failure) if failure else None,
            seconds=float(data.get("seconds", 0.0)),
            stopped=data.get("stopped"),
            usage=dict(data.get("usage") or {}),
            messages=data.get("messages"),
            model_calls=data.get("model_calls"),
        )
