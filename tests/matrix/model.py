"""A scripted model behind a real OpenAI-compatible endpoint, for frameworks that own the loop.

Inspect, Verifiers, NeMo Gym's agent and other frameworks call a model themselves. Here that
model is the cell's scripted player (:class:`tests.matrix.cells.Player`), served by
:mod:`omnienv.rollout.scripted_openai` on 127.0.0.1, so the framework's own client code path runs.
Every request is kept: :func:`model_view` reads from them what the model was actually shown
(main virtualenv only: the endpoint needs the server extra).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from omnienv.rollout.scripted_openai import Reply, create_app, observations
from omnienv.server import running
from tests.matrix.cells import CELLS, Player, image_report

__all__ = ["ModelLog", "model_view", "scripted_model"]


@dataclass
class ModelLog:
    """Every conversation the framework sent, as sent (chat ``messages`` or responses ``input``)."""

    requests: list[list[dict[str, Any]]] = field(default_factory=list)


def _prompt(messages: list[dict[str, Any]]) -> str:
    texts = []
    for message in messages:
        if message.get("role") in ("system", "developer", "user"):
            texts.extend(text for text, _ in _parts(message.get("content")))
    return "\n".join(texts)


def responder(env: str, crash: bool, log: ModelLog) -> Any:
    cell = CELLS[env]

    def respond(messages: list[dict[str, Any]]) -> Reply:
        log.requests.append(messages)
        seen = observations(messages)
        if crash:
            return [(cell.crash.name, dict(cell.crash.arguments))] if not seen else []
        player = Player(cell, _prompt(messages))
        for text in seen:  # the player decides from what it saw, so replaying it reaches the same place
            player.saw(player.act(), text)
        call = player.act()
        return [(call.name, dict(call.arguments))]

    return respond


@contextmanager
def scripted_model(env: str, *, crash: bool = False) -> Iterator[tuple[str, ModelLog]]:
    """``(base_url, log)``: an OpenAI-compatible ``/v1`` endpoint whose model plays ``env``'s cell
    (or, with ``crash``, makes the crash call first and then stops)."""
    log = ModelLog()
    with running(create_app(responder(env, crash, log))) as url:
        yield f"{url}/v1", log


_DATA_URL = re.compile(r"^data:image/[a-z]+;base64,(.+)$", re.S)


def _parts(content: Any) -> Iterator[tuple[str, bytes | None]]:
    """``(text, None)`` or ``("", image bytes)`` for each part of a message's content."""
    if isinstance(content, str):
        yield content, None
        return
    for part in content or ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            yield str(part.get("text", "")), None
        elif kind in ("image_url", "input_image", "image"):
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url or part.get("url") or part.get("data")
            found = _DATA_URL.match(str(url or ""))
            yield "", base64.b64decode(found.group(1) if found else str(url or ""))


def model_view(log: ModelLog) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """``(seen, texts, images)`` over every request: the prompts and system text the model read,
    the tool outputs it read as text, and the images it got as image parts."""
    seen: list[str] = []
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for messages in log.requests:
        for message in messages:
            is_output = message.get("role") == "tool" or message.get("type") == "function_call_output"
            content = message.get("output") if message.get("type") == "function_call_output" else message.get("content")
            for text, image in _parts(content):
                if image is not None:
                    images.append(image_report("image part", image))
                elif is_output or "<tool_response>" in text:
                    texts.append(text)
                else:
                    seen.append(text)
    return seen, texts, images
