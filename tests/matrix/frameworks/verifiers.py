"""Verifiers 0.4 (its own ``verifiers.v1`` eval runner, in its virtualenv) against scripted models.

verifiers owns the model loop, so each cell's model is the scripted player behind a real
OpenAI-compatible endpoint here (:func:`tests.matrix.model.scripted_model`), one for the episode
and one for the crash per environment; ``tests/matrix/drivers/verifiers.py`` runs all of them in
one process of the peer's virtualenv. What the model was sent comes from the endpoints' logs.

verifiers 0.4's chat harness always asks for a streamed completion, which the scripted endpoint
does not serve; :func:`streaming` relays each request to it whole and answers with the same
completion as server-sent ``chat.completion.chunk`` events.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from omnienv.server import running
from tests.matrix.cells import _BASE64_RUN, ENVS
from tests.matrix.model import ModelLog, model_view, scripted_model
from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind, run_json


def _events(completion: dict[str, Any]) -> Iterator[str]:
    """A chat completion as the SSE chunks a streaming endpoint sends for it."""
    head = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    (choice,) = completion["choices"]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        {**head, "choices": [], "usage": completion.get("usage")},
    ]
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


@contextmanager
def streaming(base_url: str) -> Iterator[str]:
    """``base_url``'s chat completions at a new ``/v1`` URL that also answers ``stream=true``."""

    async def chat(request: Request) -> Response:
        body = await request.json()
        stream = bool(body.pop("stream", False))
        body.pop("stream_options", None)
        async with httpx.AsyncClient(timeout=120) as client:
            upstream = await client.post(f"{base_url}/chat/completions", json=body)
        if not stream or upstream.status_code != 200:
            return Response(upstream.content, upstream.status_code, media_type="application/json")

        async def events() -> AsyncIterator[str]:
            for event in _events(upstream.json()):
                yield event

        return StreamingResponse(events(), media_type="text/event-stream")

    with running(Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])) as url:
        yield f"{url}/v1"


def with_model_view(report: dict[str, Any], *logs: ModelLog) -> dict[str, Any]:
    """The driver's report, completed with what the models were actually sent."""
    seen, texts, images = model_view(ModelLog([request for log in logs for request in log.requests]))
    return {
        **report,
        "seen": json.dumps([*json.loads(report["seen"]), *seen], default=repr),
        "base64_in_text": report["base64_in_text"] or any(_BASE64_RUN.search(text) for text in texts),
        "images": [*report["images"], *images],
    }


def collect_with(peer: str, driver: str, timeout: float) -> dict[str, dict[str, Any]]:
    """Serve every cell's two scripted models, run ``driver`` in ``peer``'s virtualenv, merge."""
    python = peer_python(peer)
    with ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        logs: dict[str, tuple[ModelLog, ModelLog]] = {}
        for env in ENVS:
            url, log = stack.enter_context(scripted_model(env))
            crash_url, crash_log = stack.enter_context(scripted_model(env, crash=True))
            url, crash_url = stack.enter_context(streaming(url)), stack.enter_context(streaming(crash_url))
            logs[env] = log, crash_log
            patch.setenv(f"MATRIX_MODEL_{env.upper()}", url)
            patch.setenv(f"MATRIX_CRASH_{env.upper()}", crash_url)
        lines = run_json(python, ROOT / "tests" / "matrix" / "drivers" / driver, timeout=timeout)
        return {report["env"]: with_model_view(report, *logs[report["env"]]) for report in by_kind(lines, "cell")}


def collect() -> dict[str, dict[str, Any]]:
    return collect_with("verifiers", "verifiers.py", timeout=600)
