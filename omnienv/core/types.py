"""The values that cross the environment boundary: calls in, observations and results out.

They are plain slotted dataclasses, cheap to build on the hot path, with ``to_dict`` and
``from_dict`` for any JSON transport (images become base64 there).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from omnienv.core.content import Block, as_blocks, block_from_dict, blocks_text
from omnienv.core.errors import UsageError
from omnienv.core.pickling import pickled_as_constructor_call
from omnienv.core.text import bounded_error

__all__ = ["Failure", "Observation", "State", "StepResult", "ToolCall", "ToolResult"]


@pickled_as_constructor_call
@dataclass(slots=True, init=False)
class ToolCall:
    """The agent's action: one call of one tool.

    ``arguments`` None means no arguments, ``{}``: the one rule, here, for a call made in-process
    and one read off the wire (``"arguments": null``) alike.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    def __init__(self, name: str, arguments: dict[str, Any] | None = None, id: str | None = None) -> None:
        self.name = name
        self.arguments = {} if arguments is None else arguments
        self.id = id

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.id is not None:
            out["id"] = self.id
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        """Arguments that are not an object (malformed JSON a model wrote, passed on as its text so
        the environment could answer it) are read back as written: the record must read back."""
        arguments = data.get("arguments")
        if isinstance(arguments, dict):
            arguments = dict(arguments)
        return cls(str(data["name"]), arguments, data.get("id"))


def require_tool_call(call: object, owner: str, tools: Iterable[str]) -> ToolCall:
    """``call`` itself, or the :class:`UsageError` of a ``step`` given anything else (the agent's
    text passed as it is, a dict): raised before the episode is touched, so it goes on unharmed."""
    if isinstance(call, ToolCall):
        return call
    tool = next(iter(tools), "tool_name")
    raise UsageError(
        bounded_error(
            f"{owner}: step() takes a ToolCall, not {type(call).__name__} {call!r}; "
            f"pass ToolCall('{tool}', {{...arguments...}})"
        )
    )


@pickled_as_constructor_call
@dataclass(slots=True)
class ToolResult:
    """What a tool may return when a plain string is not enough."""

    content: tuple[Block, ...]
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        content: str | Block | Iterable[str | Block],
        *,
        reward: float = 0.0,
        done: bool = False,
        info: dict[str, Any] | None = None,
    ) -> ToolResult:
        return cls(as_blocks(content), reward, done, info if info is not None else {})


@pickled_as_constructor_call
@dataclass(slots=True)
class Observation:
    """What the agent reads after reset or a step; ``is_error`` marks a failed tool call."""

    content: tuple[Block, ...]
    is_error: bool = False

    @classmethod
    def of(cls, content: str | Block | Iterable[str | Block], is_error: bool = False) -> Observation:
        return cls(as_blocks(content), is_error)

    @property
    def text(self) -> str:
        return blocks_text(self.content)

    def to_dict(self) -> dict[str, Any]:
        return {"content": [block.to_dict() for block in self.content], "is_error": self.is_error}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Observation:
        blocks = tuple(block_from_dict(block) for block in data.get("content", ()))
        return cls(blocks, bool(data.get("is_error", False)))


_GENERIC_CODES = frozenset({"ERROR", "ENV_FAILURE"})


class Ending(Protocol):
    """What tells whether an episode is over: a step's result, a text turn, the ledger."""

    @property
    def done(self) -> bool: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def failure(self) -> Failure | None: ...


def episode_over(outcome: Ending) -> bool:
    """The one rule of "over": the episode ended by its rules, was cut short, or failed.

    A step's result, a text turn and the episode ledger all answer ``over`` with it.
    """
    return outcome.done or outcome.truncated or outcome.failure is not None


@pickled_as_constructor_call
@dataclass(frozen=True, slots=True)
class Failure:
    """An infrastructure failure. Episodes that carry one are masked by trainers, never scored."""

    kind: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Failure:
        return cls(str(data["kind"]), str(data["message"]))

    @classmethod
    def from_exception(cls, where: str, exc: BaseException) -> Failure:
        """The failure ``exc`` stands for: a specific wire code as the kind (``step_timeout``,
        ``session_lost``, ``worker_lost``...) when it has one, else ``env_error``."""
        code = getattr(exc, "code", None)
        kind = code.lower() if isinstance(code, str) and code not in _GENERIC_CODES else "env_error"
        return cls(kind, bounded_error(f"{where} raised {type(exc).__name__}: {exc}"))


@pickled_as_constructor_call
@dataclass(slots=True)
class StepResult:
    """The outcome of one step.

    ``done`` means the episode ended by its own rules, ``truncated`` that a limit cut it short.
    On the last step ``reward`` includes the rubric's final score (its parts are in
    ``info["rubric"]``). ``failure`` is set only when infrastructure broke; the reward of such an
    episode means nothing and must be masked.
    """

    observation: Observation
    reward: float = 0.0
    done: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    failure: Failure | None = None

    @property
    def over(self) -> bool:
        """The episode takes no further step: it ended, was cut short, or failed."""
        return episode_over(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "observation": self.observation.to_dict(),
            "reward": self.reward,
            "done": self.done,
            "truncated": self.truncated,
            "info": self.info,
            "failure": self.failure.to_dict() if self.failure else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepResult:
        failure = data.get("failure")
        return cls(
            Observation.from_dict(data["observation"]),
            float(data.get("reward") or 0.0),
            bool(data.get("done", False)),
            bool(data.get("truncated", False)),
            dict(data.get("info") or {}),
            Failure.from_dict(failure) if failure else None,
        )


@pickled_as_constructor_call
@dataclass(slots=True)
class State:
    """The infrastructure's view of an episode. ``fields`` must never reveal the answer."""

    episode_id: str | None
    step_count: int
    done: bool = False
    truncated: bool = False
    task_id: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    reward: float | None = None
    """The episode's reward to train on: None while it runs, and when it failed (mask it). Agents
    on an agent-only server never see state; the operator reads the score here."""
    failure: Failure | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "done": self.done,
            "truncated": self.truncated,
            "task_id": self.task_id,
            **self.fields,
            "reward": self.reward,
        }
        if self.failure is not None:
            data["failure"] = self.failure.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> State:
        known = {"episode_id", "step_count", "done", "truncated", "task_id", "reward", "failure"}
        reward, failure = data.get("reward"), data.get("failure")
        return cls(
            data.get("episode_id"),
            int(data.get("step_count", 0)),
            bool(data.get("done", False)),
            bool(data.get("truncated", False)),
            data.get("task_id"),
            {k: v for k, v in data.items() if k not in known},
            None if reward is None else float(reward),
            Failure.from_dict(failure) if isinstance(failure, dict) else None,
        )
