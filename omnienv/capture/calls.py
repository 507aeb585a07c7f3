"""One model call as the capture proxy saw it: what was asked, and the exact tokens that came back.

RL on a loop-owning agent must train on the token ids the inference server sampled, not on a
re-tokenisation of the text (which costs time on long conversations and can differ from what was
sampled). So a call keeps the server's own ids and log-probabilities, or says plainly that the
server gave none; it never tokenises anything itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["BROKEN_OFF", "CUT", "ModelCall"]

Api = Literal["chat", "responses"]

BROKEN_OFF = frozenset({"abort", "error", "failed", "cancelled", "queued", "in_progress"})
"""Finish reasons (a response's status) of a generation the server broke off, not one the model
ended: vLLM's ``abort`` and ``error``, SGLang's ``abort``, a response ``failed``, ``cancelled`` or
never finished. Its tokens stop where the server stopped, so they are no sample of the model's."""
CUT = frozenset({"length", "max_output_tokens"})
"""Finish reasons of a generation the token limit cut (``max_tokens``, ``max_output_tokens``): the
model's own tokens, but not its whole answer."""


@dataclass(slots=True)
class ModelCall:
    """A request forwarded upstream and its answer, tied to one episode."""

    episode: str | None
    """The episode the harness was pointed at (its base URL or header); None when it named none."""
    api: Api
    request: dict[str, Any]
    """The body the harness sent, before the proxy asked for token ids."""
    response: dict[str, Any]
    """The answer as the harness got it (a streamed one assembled into one response)."""
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    """One per completion token, in order."""
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    latency_s: float = 0.0
    """From the request's arrival to the last byte of the answer."""
    streamed: bool = False
    missing: str | None = None
    """Why the token ids or log-probabilities are absent (the upstream gave none), else None."""
    index: int = 0
    """The call's place in its episode, from 0."""

    @property
    def has_tokens(self) -> bool:
        return self.prompt_token_ids is not None and self.completion_token_ids is not None

    @property
    def broken_off(self) -> bool:
        """The server broke the generation off (:data:`BROKEN_OFF`): the harness got what was generated
        until then, not an answer the model ended."""
        return self.finish_reason in BROKEN_OFF

    @property
    def cut(self) -> bool:
        """The token limit cut the generation (:data:`CUT`)."""
        return self.finish_reason in CUT

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelCall:
        known = {name for name in cls.__dataclass_fields__}
        return cls(**{key: value for key, value in data.items() if key in known})
