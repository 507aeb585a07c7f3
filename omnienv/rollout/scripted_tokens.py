"""The scripted model's tokens: its byte-level tokeniser, how it renders a conversation, and what
it sampled for a request, with vLLM's log-probability entries for it.

:mod:`omnienv.rollout.scripted_openai` answers with these when a request asks for token ids or
log-probabilities, the vLLM way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["Asked", "Produced", "ScriptedTokens", "hermes_calls", "logprob_entries", "sample_completion", "text_of"]


class ScriptedTokens:
    """The scripted model's tokeniser: one token per UTF-8 byte (id = byte + 3), and two specials.

    It is trivial on purpose; what matters is that it is the server's, so the ids a client gets
    can only have come from here. Each message renders as ``START role\\n text END``; the prompt
    ends with ``START assistant\\n`` and a completion with ``END`` (the end-of-turn token).
    """

    START = 1
    END = 2
    OFFSET = 3

    @classmethod
    def encode(cls, text: str) -> list[int]:
        return [byte + cls.OFFSET for byte in text.encode()]

    @classmethod
    def piece(cls, token: int) -> str:
        """The text of one token as vLLM writes it in logprobs (a lone non-ASCII byte by its id)."""
        if token == cls.START:
            return "<|im_start|>"
        if token == cls.END:
            return "<|im_end|>"
        byte = token - cls.OFFSET
        return chr(byte) if byte < 128 else f"token_id:{token}"

    @classmethod
    def logprob(cls, position: int, token: int) -> float:
        """A deterministic log-probability in (-4, 0], different for most positions and tokens."""
        return -((token * 31 + position * 17) % 97) / 25.0

    @classmethod
    def prompt(cls, items: list[dict[str, Any]]) -> tuple[str, list[int]]:
        """A conversation (chat ``messages`` or responses ``input``) rendered, and its ids."""
        text, ids = "", []
        for item in items:
            role, body = _rendered(item)
            text += f"<|im_start|>{role}\n{body}<|im_end|>"
            ids += [cls.START, *cls.encode(f"{role}\n{body}"), cls.END]
        text += "<|im_start|>assistant\n"
        ids += [cls.START, *cls.encode("assistant\n")]
        return text, ids


def _rendered(item: dict[str, Any]) -> tuple[str, str]:
    """(role, text) of one message or responses input item, tool calls written Hermes-style."""
    if item.get("type") == "function_call":
        return "assistant", hermes_calls([(item.get("name", ""), _arguments(item.get("arguments")))])
    if item.get("type") == "function_call_output":
        return "tool", text_of(item.get("output"))
    text = text_of(item.get("content"))
    calls = [(c["function"]["name"], _arguments(c["function"].get("arguments"))) for c in item.get("tool_calls") or ()]
    return str(item.get("role", "user")), text + hermes_calls(calls)


def _arguments(raw: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {"raw": raw}
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def hermes_calls(calls: list[tuple[str, dict[str, Any]]]) -> str:
    return "\n".join(f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in calls)


@dataclass(slots=True)
class Produced:
    """What the server sampled for one request it was asked tokens for (``app.state.produced``)."""

    api: str
    prompt_token_ids: list[int]
    completion_token_ids: list[int]
    logprobs: list[float]


@dataclass(frozen=True, slots=True)
class Asked:
    """Which of vLLM's token fields a request asked for."""

    token_ids: bool
    logprobs: bool

    @property
    def any(self) -> bool:
        return self.token_ids or self.logprobs


def sample_completion(api: str, items: list[dict[str, Any]], completion: str) -> tuple[str, Produced]:
    prompt_text, prompt = ScriptedTokens.prompt(items)
    ids = [*ScriptedTokens.encode(completion), ScriptedTokens.END]
    logprobs = [ScriptedTokens.logprob(i, token) for i, token in enumerate(ids)]
    return prompt_text, Produced(api, prompt, ids, logprobs)


def logprob_entries(produced: Produced, start: int, stop: int) -> list[dict[str, Any]]:
    """vLLM's chat ``logprobs.content`` entries for completion tokens ``start:stop``."""
    entries = []
    for token, logprob in zip(produced.completion_token_ids[start:stop], produced.logprobs[start:stop], strict=True):
        piece = ScriptedTokens.piece(token)
        entries.append({"token": piece, "logprob": logprob, "bytes": list(piece.encode()), "top_logprobs": []})
    return entries


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")
