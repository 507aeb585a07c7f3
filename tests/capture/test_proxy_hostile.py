"""The capture proxy in front of an upstream that answers what no well-behaved one would.

The rule under test: a record holds what the harness got, call for call, or says what it lacks;
and nothing the proxy says names the credentials of the upstream's URL. Servers are bare ASGI apps
on 127.0.0.1 (``running``), driven through the real ``openai`` client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from typing import Any

import httpx
import openai
import pytest

from omnienv.capture import CaptureProxy, TrainingRecord, to_trl_rollout
from omnienv.server import running
from tests.capture.test_proxy import bare_upstream, client, terabyte_upstream

MESSAGES: Any = [{"role": "user", "content": "hi"}]


def answer(guess: str, **extra: Any) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "guess", "arguments": json.dumps({"word": guess})}}
    choice = {"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]}}
    choice |= {"finish_reason": "tool_calls", "token_ids": [7, 8], "logprobs": {"content": [{"logprob": -0.1}] * 2}}
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]} | extra


async def whole(send: Any, body: bytes) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def test_an_answer_only_python_s_json_reads_is_recorded() -> None:
    @bare_upstream
    async def lenient(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await whole(send, json.dumps(answer("crane", prompt_token_ids=[1, 2]))[:-1].encode() + b', "x_debug": NaN}')

    with running(lenient) as url, CaptureProxy(f"{url}/v1") as proxy:
        model = client(proxy.episode_url("e"))
        got = model.chat.completions.create(model="m", messages=MESSAGES)
        # the harness echoes a lone surrogate (a legal JSON escape) back in its next request
        raw = b'{"model": "m", "messages": [{"role": "user", "content": "a \\ud800"}]}'
        echoed = httpx.post(f"{proxy.episode_url('e')}/chat/completions", content=raw, timeout=10)
        calls = proxy.calls("e")
    assert got.choices[0].message.tool_calls is not None and echoed.status_code == 200
    assert len(calls) == 2 and all(call.completion_token_ids == [7, 8] and not call.missing for call in calls)
    assert calls[1].request["messages"][0]["content"] == "a \ud800"


def test_an_answer_that_is_not_json_is_recorded_as_missing() -> None:
    @bare_upstream
    async def html(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await whole(send, b"<html>busy</html>")

    with running(html) as url, CaptureProxy(f"{url}/v1") as proxy:
        with pytest.raises(ValueError):  # the openai client cannot read it either
            client(proxy.episode_url("e")).chat.completions.create(model="m", messages=MESSAGES)
        (call,) = proxy.calls("e")
    assert call.missing is not None and "not a JSON object" in call.missing


def test_an_answer_the_harness_gave_up_on_is_not_recorded() -> None:
    """The first try's body comes only after the harness timed out and retried; the retry is
    answered after it, so without the proxy watching the harness the stale answer is recorded first."""
    retried, stale_sent = asyncio.Event(), asyncio.Event()
    tries = iter(range(10))

    @bare_upstream
    async def slow_first(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        if next(tries) == 0:
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
            )
            await retried.wait()
            await send({"type": "http.response.body", "body": json.dumps(answer("fuzzy")).encode()})
            stale_sent.set()
            return
        retried.set()
        await stale_sent.wait()
        await whole(send, json.dumps(answer("crane")).encode())

    with running(slow_first) as url, CaptureProxy(f"{url}/v1") as proxy:
        model = openai.OpenAI(base_url=proxy.episode_url("e"), api_key="k", max_retries=1, timeout=1.0)
        got = model.chat.completions.create(model="m", messages=MESSAGES)
        calls = proxy.calls("e")
    assert got.choices[0].message.tool_calls[0].function.arguments == '{"word": "crane"}'  # type: ignore[index,union-attr]
    assert [call.response["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] for call in calls] == [
        '{"word": "crane"}'
    ]


def test_the_upstream_s_credentials_are_in_no_message() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with CaptureProxy(f"http://alice:s3cret@127.0.0.1:{port}/v1") as proxy:
        with pytest.raises(openai.APIStatusError) as failed:
            client(proxy.episode_url("e")).chat.completions.create(model="m", messages=MESSAGES)
    assert failed.value.status_code == 502 and f"upstream http://127.0.0.1:{port} could not" in str(failed.value)
    assert "s3cret" not in str(failed.value) and "alice" not in str(failed.value)


def test_an_answer_over_the_size_limit_gets_a_502() -> None:
    with running(terabyte_upstream) as url, CaptureProxy(f"{url}/v1") as proxy:
        with pytest.raises(openai.APIStatusError) as failed:
            client(proxy.episode_url("e")).chat.completions.create(model="m", messages=MESSAGES)
        assert proxy.calls("e") == []
    assert failed.value.status_code == 502 and "byte limit" in str(failed.value)


def test_a_record_with_line_separators_and_a_lone_surrogate_is_written_and_resumed_whole(tmp_path: Any) -> None:
    from omnienv.capture import ModelCall, TrainingRecord
    from omnienv.cli.eval import resumed_records
    from omnienv.rollout.trajectory import Episode

    text = "a\u2028b\u2029c\u0085d \ud800 é"
    call = ModelCall(episode="episode-0", api="chat", request={"messages": [{"content": text}]}, response={})
    record = TrainingRecord.from_calls([call], 1.0, session_id="episode-0", info={"index": 0})
    path = tmp_path / "records.jsonl"
    with path.open("w", encoding="utf-8") as stream:  # a lone surrogate used to fail this write
        stream.write(record.to_json() + "\n")
    (kept,) = resumed_records(path, [Episode("wordle", 0, None, 0, "p")])
    assert kept.calls[0].request["messages"][0]["content"] == text


def chunk(content: str, ids: list[int], logprob: float, finish: str | None = None, **extra: Any) -> str:
    """One ``chat.completion.chunk`` event the vLLM way (written by Python's json, as some servers do)."""
    entries = [{"token": "x", "logprob": logprob}] * len(ids)
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish, "token_ids": ids}
    data = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [choice]} | extra
    return "data: " + json.dumps(data | {"choices": [choice | {"logprobs": {"content": entries}}]}) + "\n\n"


def streaming(events: list[str], cut: bool = False) -> Any:
    """An upstream that streams ``events`` to every call (``cut``: then breaks the connection off)."""

    @bare_upstream
    async def stream(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": "".join(events).encode(), "more_body": cut})
        if cut:
            raise RuntimeError("the model server died mid-stream")

    return stream


def streamed_text(proxy: CaptureProxy) -> str:
    pieces = client(proxy.episode_url("e")).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    return "".join(piece.choices[0].delta.content or "" for piece in pieces if piece.choices)


@pytest.mark.parametrize("middle", ["b\ud800", float("-inf")], ids=["lone-surrogate", "infinite-logprob"])
def test_a_streamed_event_only_python_s_json_reads_is_assembled_like_the_rest(middle: str | float) -> None:
    """Such an event was passed on unread: its token ids were left out of a record that looked whole."""
    text, logprob = (middle, -0.2) if isinstance(middle, str) else ("b", middle)
    first = chunk("a", [1], -0.1, prompt_token_ids=[5, 6])
    events = [first, chunk(text, [2], logprob), chunk("", [3], -0.3, "stop"), "data: [DONE]\n\n"]
    with running(streaming(events)) as url, CaptureProxy(f"{url}/v1") as proxy:
        assert streamed_text(proxy) == "a" + text
        (call,) = proxy.calls("e")
    assert call.prompt_token_ids == [5, 6] and call.completion_token_ids == [1, 2, 3]
    assert call.response["choices"][0]["message"]["content"] == "a" + text
    if isinstance(middle, str):
        assert call.logprobs == [-0.1, -0.2, -0.3] and call.missing is None
    else:
        assert call.logprobs is None and call.missing is not None and "not a finite number" in call.missing


@pytest.mark.parametrize("ending", ["error-event", "no-finish", "cut"])
def test_a_stream_the_model_server_fails_is_its_failure_of_the_call(ending: str) -> None:
    """An error event, or a stream that ends before its answer does, went unrecorded without a
    word: an episode that stopped on it looked like the harness's own doing."""
    events = [chunk("a", [1], -0.1, prompt_token_ids=[5])]
    if ending == "error-event":  # what vLLM sends when generation fails mid-stream
        events += ['data: {"error": {"message": "boom", "code": 500}}\n\n', "data: [DONE]\n\n"]
    with running(streaming(events, cut=ending == "cut")) as url, CaptureProxy(f"{url}/v1") as proxy:
        with pytest.raises((openai.APIError, httpx.HTTPError)) if ending != "no-finish" else contextlib.nullcontext():
            streamed_text(proxy)
        assert proxy.calls("e") == []
        failure = proxy.log.failure("e")
    assert failure is not None and "boom" not in failure


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_generation_the_model_server_broke_off_is_recorded_as_its_failure_and_never_trained(stream: bool) -> None:
    """vLLM ends an aborted generation with finish reason ``abort``: it was recorded as a whole,
    trainable turn, the model's tokens cut where the server stopped."""
    events = [chunk("a", [1], -0.1, prompt_token_ids=[5]), chunk("", [2], -0.2, "abort"), "data: [DONE]\n\n"]
    broken = answer("crane", prompt_token_ids=[5])
    broken["choices"][0]["finish_reason"] = "abort"

    @bare_upstream
    async def aborting(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if stream:
            return await streaming(events)(scope, receive, send)
        await receive()
        await whole(send, json.dumps(broken).encode())

    with running(aborting) as url, CaptureProxy(f"{url}/v1") as proxy:
        if stream:
            streamed_text(proxy)
        else:
            client(proxy.episode_url("e")).chat.completions.create(model="m", messages=MESSAGES)
        (call,) = proxy.calls("e")
        failure = proxy.log.failure("e")
    assert call.finish_reason == "abort" and call.has_tokens and failure is not None and "'abort'" in failure
    record = TrainingRecord.from_calls([call], reward=1.0)
    assert not record.trainable and record.void == record.missing and "broke the generation off" in record.void[0]
    with pytest.raises(ValueError, match="broke the generation off"):
        to_trl_rollout([record])


def test_a_stream_whose_ids_fall_short_of_its_usage_is_recorded_without_them() -> None:
    """A server that skips the chunk of a token the tool parser held back (vLLM before it sent
    those with ``return_token_ids``) gave a record one id short that looked whole."""
    usage = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": []}
    usage["usage"] = {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}
    events = [chunk("a", [1], -0.1, prompt_token_ids=[5, 6]), chunk("c", [3], -0.3, "stop")]
    events += [f"data: {json.dumps(usage)}\n\n", "data: [DONE]\n\n"]
    with running(streaming(events)) as url, CaptureProxy(f"{url}/v1") as proxy:
        assert streamed_text(proxy) == "ac"
        (call,) = proxy.calls("e")
    assert call.prompt_token_ids == [5, 6] and call.completion_token_ids is None
    assert call.missing == "no completion token ids: 2 came for the 3 the usage counts"
    assert TrainingRecord.from_calls([call], 1.0).missing[0].startswith("call 0: no token ids (no completion token ids")


@pytest.mark.parametrize(
    ("path", "body"),
    [("chat/completions", {"messages": MESSAGES, "stream": True, "stream_options": 5}), ("responses", {"include": 5})],
    ids=["chat", "responses"],
)
def test_a_request_with_a_field_of_the_wrong_shape_gets_the_upstream_s_answer(path: str, body: dict[str, Any]) -> None:
    """The proxy merged its fields into it and raised (a 500 from the proxy, a traceback in its log)."""
    seen: list[bytes] = []

    @bare_upstream
    async def strict(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 422, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"error": {"message": "bad field"}}'})

    with running(strict) as url, CaptureProxy(f"{url}/v1") as proxy:
        got = httpx.post(f"{proxy.episode_url('e')}/{path}", json={"model": "m"} | body, timeout=10)
    assert got.status_code == 422 and "bad field" in got.text and json.loads(seen[0]) == {"model": "m"} | body
