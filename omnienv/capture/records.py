"""One training record per episode: the model calls it made, its reward, and the token view a trainer reads.

A loop-owning agent's episode reaches a trainer as the calls the capture proxy recorded. The trainer
needs one token sequence per conversation, with a loss mask over what the model generated and the
sampling log-probabilities beside it, and it needs them built from the server's own ids: text is
never tokenised here, so a record whose calls carry no ids says so and has no token view.

The prefix rule. A multi-turn conversation sends, at each call, a prompt that usually is the
previous prompt, the previous completion and the new turn's tokens (tool results, a user message,
the template's turn markers). When a call's prompt starts with every token of the sequence so far,
only the new tokens are appended (mask 0) and then its completion (mask 1), so nothing is counted
twice. When it does not (the harness summarised or trimmed its history, retried a call, or the
template re-rendered an earlier turn differently), the call starts a new :class:`TokenSegment`:
stitching across the break would make a sequence the model never saw. A record with more than one
segment is :attr:`~TrainingRecord.rewritten`; exporters that need one sequence per episode refuse it
rather than guess.

A failure is never a zero reward: a record that carries one has ``reward`` None, and trainers mask it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from omnienv.capture.calls import ModelCall
from omnienv.core import EpisodeLedger, Failure

__all__ = [
    "EpisodeLike",
    "TokenSegment",
    "TrainingRecord",
    "build_segments",
    "iter_records",
    "read_records",
    "write_records",
]

_UNSAFE = re.compile("[\u0085\u2028\u2029\ud800-\udfff]")


@dataclass(slots=True)
class TokenSegment:
    """One token sequence the model actually saw, stitched from calls that extend each other exactly."""

    token_ids: list[int]
    loss_mask: list[int]
    """1 for tokens the model generated (completion ids), 0 for everything else."""
    logprobs: list[float | None]
    """The sampling log-probability of each model-generated token; None elsewhere, or where the
    server gave none."""
    calls: list[int]
    """The :attr:`ModelCall.index` of each call stitched into this segment, in order."""
    prompt_length: int
    """How many tokens come before the first generated one: the first call's prompt."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "token_ids": list(self.token_ids),
            "loss_mask": list(self.loss_mask),
            "logprobs": list(self.logprobs),
            "calls": list(self.calls),
            "prompt_length": self.prompt_length,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenSegment:
        return cls(
            token_ids=[int(t) for t in data["token_ids"]],
            loss_mask=[int(m) for m in data["loss_mask"]],
            logprobs=[None if lp is None else float(lp) for lp in data["logprobs"]],
            calls=[int(c) for c in data["calls"]],
            prompt_length=int(data["prompt_length"]),
        )


class EpisodeLike(Protocol):
    """What :meth:`TrainingRecord.from_episode` reads of a rollout's episode.

    Structural, so that capture needs no import of the rollout package; ``omnienv.rollout.Episode``
    fits it.
    """

    @property
    def env(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def task_id(self) -> str | None: ...
    @property
    def seed(self) -> int | None: ...
    @property
    def policy(self) -> str: ...
    @property
    def ledger(self) -> EpisodeLedger: ...


def _logprobs_of(call: ModelCall) -> list[float | None]:
    """The call's per-token log-probabilities, or Nones when absent or not one per completion token
    (a misaligned list would put credit on the wrong tokens, so it is dropped, and reported)."""
    completion = call.completion_token_ids or []
    if call.logprobs is None or len(call.logprobs) != len(completion):
        return [None] * len(completion)
    return [float(lp) for lp in call.logprobs]


def _void(call: ModelCall) -> str | None:
    """Why a call's tokens are no training data even where its ids are whole, or None."""
    if call.broken_off:
        return (
            f"the model server broke the generation off (finish reason {call.finish_reason!r}): "
            "its tokens end where the server stopped, not where the model did"
        )
    if len(choices := call.response.get("choices") or ()) > 1:
        return f"{len(choices)} choices, of which only the first is recorded (the harness may have used another)"
    return None


def build_segments(calls: Sequence[ModelCall]) -> list[TokenSegment] | None:
    """The calls' token segments by the prefix rule (see the module's docstring); None when any call
    lacks token ids, since a gap would leave generated tokens looking like prompt."""
    if not calls or not all(call.has_tokens for call in calls):
        return None
    segments: list[TokenSegment] = []
    for call in calls:
        prompt = list(call.prompt_token_ids or [])
        completion = list(call.completion_token_ids or [])
        current = segments[-1] if segments else None
        if current is not None and prompt[: len(current.token_ids)] == current.token_ids:
            new = prompt[len(current.token_ids) :]
            current.token_ids += new
            current.loss_mask += [0] * len(new)
            current.logprobs += [None] * len(new)
        else:
            current = TokenSegment(
                token_ids=prompt,
                loss_mask=[0] * len(prompt),
                logprobs=[None] * len(prompt),
                calls=[],
                prompt_length=len(prompt),
            )
            segments.append(current)
        current.token_ids += completion
        current.loss_mask += [1] * len(completion)
        current.logprobs += _logprobs_of(call)
        current.calls.append(call.index)
    return segments


@dataclass(slots=True)
class TrainingRecord:
    """One episode as a trainer reads it: the calls in order, the outcome, and the token view."""

    calls: list[ModelCall]
    """Ordered by :attr:`ModelCall.index` (the constructors sort them)."""
    session_id: str | None = None
    """The environment's session (episode) id the calls were made for."""
    reward: float | None = None
    """The episode's reward; None when it failed or was never scored, never 0 for a failure."""
    failure: Failure | None = None
    task_id: str | None = None
    env: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    """Free-form facts about the episode (seed, policy, ...), kept as JSON."""

    def __post_init__(self) -> None:
        if self.failure is not None and self.reward is not None:
            raise ValueError(f"a failed episode has no reward (got {self.reward!r} with {self.failure.kind})")

    @classmethod
    def from_calls(
        cls,
        calls: Iterable[ModelCall],
        reward: float | None,
        failure: Failure | None = None,
        session_id: str | None = None,
        *,
        task_id: str | None = None,
        env: str | None = None,
        info: dict[str, Any] | None = None,
    ) -> TrainingRecord:
        """A record from captured calls and the episode's outcome. The session id defaults to the
        episode every call names, when they all name the same one."""
        ordered = sorted(calls, key=lambda call: call.index)
        if session_id is None:
            named = {call.episode for call in ordered}
            session_id = named.pop() if len(named) == 1 else None
        return cls(ordered, session_id, reward, failure, task_id, env, dict(info or {}))

    @classmethod
    def from_episode(
        cls, episode: EpisodeLike, calls: Iterable[ModelCall], session_id: str | None = None
    ) -> TrainingRecord:
        """A record from a rollout's episode and the calls its agent made.

        The reward is the ledger's reward to train on: None while the episode is unfinished or when
        it failed, including a failure reported by a single step.
        """
        ledger = episode.ledger
        return cls.from_calls(
            calls,
            reward=ledger.final_reward,
            failure=ledger.failure,
            session_id=session_id,
            task_id=episode.task_id,
            env=episode.env,
            info={"index": episode.index, "seed": episode.seed, "policy": episode.policy},
        )

    @property
    def segments(self) -> list[TokenSegment] | None:
        """The token view, or None when some call has no token ids (see :attr:`missing`)."""
        return build_segments(self.calls)

    @property
    def has_tokens(self) -> bool:
        return bool(self.calls) and all(call.has_tokens for call in self.calls)

    @property
    def rewritten(self) -> bool:
        """Whether some call's prompt did not extend the conversation so far, so the token view has
        more than one segment."""
        segments = self.segments
        return segments is not None and len(segments) > 1

    @property
    def missing(self) -> list[str]:
        """Why the token view is absent or incomplete, one line per call at fault; empty when whole."""
        if not self.calls:
            return ["no model calls were captured"]
        problems: list[str] = []
        for call in self.calls:
            if (why := _void(call)) is not None:
                problems.append(f"call {call.index}: {why}")
            elif not call.has_tokens:
                problems.append(f"call {call.index}: no token ids ({call.missing or 'the upstream gave none'})")
            elif call.logprobs is None:
                problems.append(f"call {call.index}: no logprobs ({call.missing or 'the upstream gave none'})")
            elif len(call.logprobs) != len(call.completion_token_ids or []):
                problems.append(
                    f"call {call.index}: {len(call.logprobs)} logprobs for "
                    f"{len(call.completion_token_ids or [])} completion tokens"
                )
        return problems

    @property
    def cut(self) -> list[int]:
        """The :attr:`ModelCall.index` of each call the token limit cut (finish reason ``length``,
        ``max_output_tokens``): trainable, but a trainer that masks overlong answers masks these."""
        return [call.index for call in self.calls if call.cut]

    @property
    def void(self) -> list[str]:
        """The calls whose tokens must not be trained on even with their ids whole (the server broke
        the generation off, or only one of several choices is recorded), one line each; a subset of
        :attr:`missing`."""
        return [f"call {call.index}: {why}" for call in self.calls if (why := _void(call)) is not None]

    @property
    def trainable(self) -> bool:
        """Scored, not failed, and with a complete token view (ids and log-probabilities)."""
        return self.failure is None and self.reward is not None and not self.missing

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON; ``segments``, ``missing`` and ``cut`` are derived, written for readers without
        this package, and ignored by :meth:`from_dict`."""
        segments = self.segments
        return {
            "session_id": self.session_id,
            "task_id": self.task_id,
            "env": self.env,
            "reward": self.reward,
            "failure": self.failure.to_dict() if self.failure else None,
            "info": self.info,
            "calls": [call.to_dict() for call in self.calls],
            "segments": None if segments is None else [segment.to_dict() for segment in segments],
            "missing": self.missing,
            "cut": self.cut,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingRecord:
        failure = data.get("failure")
        reward = data.get("reward")
        return cls(
            calls=[ModelCall.from_dict(call) for call in data.get("calls", ())],
            session_id=data.get("session_id"),
            reward=None if reward is None else float(reward),
            failure=Failure.from_dict(failure) if failure else None,
            task_id=data.get("task_id"),
            env=data.get("env"),
            info=dict(data.get("info") or {}),
        )

    def to_json(self) -> str:
        """One line of JSON, text as UTF-8 but for the characters written escaped: those a reader
        splits lines on (U+0085, U+2028, U+2029; JSON escapes the control characters itself) and
        lone surrogates a model's text may carry (no UTF-8 encoder takes one), so that every line
        writes and reads back exactly. They can only be inside strings, where an escape is valid."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))
        return _UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)

    @classmethod
    def from_json(cls, line: str) -> TrainingRecord:
        return cls.from_dict(json.loads(line))


def write_records(target: str | Path | IO[str], records: Iterable[TrainingRecord]) -> int:
    """Write one JSON line per record to a path (replaced) or an open text stream; returns the count."""
    if isinstance(target, (str, Path)):
        with open(target, "w", encoding="utf-8") as stream:
            return write_records(stream, records)
    count = 0
    for record in records:
        target.write(record.to_json() + "\n")
        count += 1
    return count


def iter_records(source: str | Path | IO[str]) -> Iterator[TrainingRecord]:
    """The records of a JSONL path or stream, one per non-blank line, lazily."""
    if isinstance(source, (str, Path)):
        with open(source, encoding="utf-8") as stream:
            yield from iter_records(stream)
        return
    for line in source:
        if line.strip():
            yield TrainingRecord.from_json(line)


def read_records(source: str | Path | IO[str]) -> list[TrainingRecord]:
    return list(iter_records(source))
