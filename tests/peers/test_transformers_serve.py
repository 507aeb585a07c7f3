"""The capture proxy in front of a real model server: ``transformers serve`` and a tiny model built on the spot.

transformers' OpenAI-compatible server runs in its own virtualenv (it needs torch and FastAPI),
serving a random Qwen3-shaped model saved to a temporary folder; the hub is off, nothing is
downloaded. That server returns no token ids and no log-probabilities: it ignores ``logprobs`` and
``include`` and refuses vLLM's own fields (``return_token_ids``, ``enable_response_messages``) with
a 422. So the proxy, told nothing, meets that refusal on its first call, sends the harness's own
body instead (and every later one unchanged), and records each call with its request, answer,
usage, latency and finish reason, no ids (it never tokenises), and a ``missing`` that says why.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI

from omnienv.capture import CaptureProxy, ModelCall, TrainingRecord
from tests.peerenv import PEERS, peer_python

SCRIPT = PEERS / "transformers" / "serve_tiny.py"
PROMPT = [{"role": "user", "content": "w1 w2 w3"}]
NO_IDS = "the upstream returned no prompt token ids, completion token ids, log-probabilities"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The server's base URL and its model's name (the folder it was saved to)."""
    python = peer_python("transformers")
    folder = tmp_path_factory.mktemp("transformers-serve")
    model, log = folder / "model", folder / "serve.log"
    environ = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [str(python), str(SCRIPT), str(model)], stdout=sink, stderr=subprocess.STDOUT, env=environ,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 150
        while not (found := re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", log.read_text())):
            assert proc.poll() is None, f"transformers serve exited {proc.returncode}:\n{log.read_text()[-4000:]}"
            assert time.monotonic() < deadline, f"transformers serve did not start:\n{log.read_text()[-4000:]}"
            time.sleep(0.1)
        yield f"{found.group(1)}/v1", str(model)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def check(call: ModelCall, index: int, streamed: bool, refused: bool) -> None:
    """What every call through the proxy holds against this server."""
    assert call.index == index and call.streamed is streamed and call.latency_s > 0
    assert call.prompt_token_ids is None and call.completion_token_ids is None and call.logprobs is None
    assert call.missing is not None and call.missing.startswith(NO_IDS)
    assert ("refused vLLM's token fields (422" in call.missing) is refused


def test_chat_calls_are_recorded_and_say_they_have_no_token_ids(served: tuple[str, str]) -> None:
    url, name = served
    direct = OpenAI(base_url=url, api_key="local", max_retries=0)
    plain = direct.chat.completions.create(model=name, messages=PROMPT, max_tokens=6, logprobs=True)  # type: ignore[arg-type]
    assert plain.choices[0].logprobs is None and not (plain.model_extra or {})  # it ignores logprobs; no ids
    with CaptureProxy(url) as proxy:
        model = OpenAI(base_url=proxy.episode_url("chat"), api_key="local", max_retries=0)
        whole = model.chat.completions.create(model=name, messages=PROMPT, max_tokens=6)  # type: ignore[arg-type]
        streamed = model.chat.completions.create(model=name, messages=PROMPT, max_tokens=4, stream=True)  # type: ignore[arg-type]
        chunks: list[Any] = list(streamed)
        first, second = proxy.calls("chat")
        assert proxy.app.refusal is not None and "return_token_ids" in proxy.app.refusal
    assert whole.choices[0].finish_reason == "length" and whole.usage is not None
    check(first, 0, streamed=False, refused=True)
    assert first.request == {"model": name, "messages": PROMPT, "max_tokens": 6}  # as the harness sent it
    assert first.response["choices"][0]["message"]["content"] == whole.choices[0].message.content
    assert first.finish_reason == "length" and first.usage == whole.usage.model_dump(exclude_none=True)
    assert first.usage["completion_tokens"] == 6 and first.usage["prompt_tokens"] > 0

    check(second, 1, streamed=True, refused=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert second.response["choices"][0]["message"]["content"] == text
    assert second.finish_reason == "length" and second.usage["completion_tokens"] == 4

    record = TrainingRecord.from_calls([first, second], 1.0, None, "chat")
    assert record.segments is None and not record.trainable and record.missing


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_responses_calls_are_recorded_and_say_they_have_no_token_ids(served: tuple[str, str], stream: bool) -> None:
    url, name = served
    with CaptureProxy(url) as proxy:
        model = OpenAI(base_url=proxy.episode_url("responses"), api_key="local", max_retries=0)
        for _ in range(2):  # refused, then sent unchanged from the start
            if stream:
                events = list(model.responses.create(model=name, input="w1 w2", max_output_tokens=5, stream=True))
                (answer,) = [event.response for event in events if event.type == "response.completed"]
            else:
                answer = model.responses.create(model=name, input="w1 w2", max_output_tokens=5, stream=False)
        first, second = proxy.calls("responses")
        assert proxy.app.refusal is not None and "enable_response_messages" in proxy.app.refusal
    for n, call in enumerate((first, second)):
        check(call, n, streamed=stream, refused=True)
        assert call.api == "responses" and call.finish_reason == "completed"
        assert call.request == {"model": name, "input": "w1 w2", "max_output_tokens": 5, "stream": stream}
        assert call.usage["output_tokens"] == 5 and call.usage["input_tokens"] > 0
    assert second.response["output"][0]["content"][0]["text"] == answer.output_text


def test_told_not_to_ask_for_token_ids_the_proxy_sends_every_call_unchanged(served: tuple[str, str]) -> None:
    url, name = served
    with CaptureProxy(url, request_tokens=False) as proxy:
        model = OpenAI(base_url=proxy.episode_url("plain"), api_key="local", max_retries=0)
        model.chat.completions.create(model=name, messages=PROMPT, max_tokens=3)  # type: ignore[arg-type]
        (call,) = proxy.calls("plain")
        assert proxy.app.refusal is None
    check(call, 0, streamed=False, refused=False)
    assert call.finish_reason == "length" and call.usage["completion_tokens"] == 3
