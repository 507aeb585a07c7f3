"""The capture proxy through the real ``openai`` client, against the scripted vLLM-like endpoint.

Every server runs on 127.0.0.1 in this process (``running`` binds port 0 and waits for start-up),
and the scripted endpoint keeps what it sampled in ``app.state.produced``, so the records can be
checked against the server's own tokens, call by call.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import openai
import pytest
from openai import OpenAI
from starlette.applications import Starlette

from omnienv.capture import EPISODE_HEADER, CaptureProxy, ModelCall
from omnienv.rollout.scripted_openai import Faults, Produced, Reply, ScriptedTokens, create_app, observations
from omnienv.server import running

TURNS = 3
CHAT_TOOLS = [{"type": "function", "function": {"name": "guess", "parameters": {"type": "object"}}}]
RESPONSE_TOOLS = [{"type": "function", "name": "guess", "parameters": {"type": "object"}}]


def responder(messages: list[dict[str, Any]]) -> Reply:
    """Guesses (one with a non-ASCII word, for multi-byte tokens) until it has read TURNS results."""
    seen = len(observations(messages))
    return [("guess", {"word": f"crane-{seen}-é"})] if seen < TURNS else []


@pytest.fixture
def upstream() -> Iterator[tuple[Starlette, str]]:
    app = create_app(responder)
    with running(app) as url:
        yield app, f"{url}/v1"


@pytest.fixture
def proxy(upstream: tuple[Starlette, str]) -> Iterator[CaptureProxy]:
    with CaptureProxy(upstream[1]) as capture:
        yield capture


def client(base_url: str, **options: Any) -> OpenAI:
    return OpenAI(base_url=base_url, api_key="local", max_retries=0, **options)


def chat_turn(model: OpenAI, messages: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    """One call; the assistant message as a dict (a streamed one joined from its deltas)."""
    if not stream:
        answer = model.chat.completions.create(model="scripted", messages=messages, tools=CHAT_TOOLS)
        assert answer.model_extra is not None and "prompt_token_ids" not in answer.model_extra
        assert answer.choices[0].logprobs is None and "token_ids" not in (answer.choices[0].model_extra or {})
        return answer.choices[0].message.model_dump(exclude_none=True)
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    calls: dict[int, dict[str, Any]] = {}
    for chunk in model.chat.completions.create(model="scripted", messages=messages, tools=CHAT_TOOLS, stream=True):
        assert "prompt_token_ids" not in (chunk.model_extra or {}) and chunk.usage is None  # nobody asked
        for choice in chunk.choices:
            assert choice.logprobs is None and "token_ids" not in (choice.model_extra or {})
            message["content"] += choice.delta.content or ""
            for delta in choice.delta.tool_calls or ():
                call = calls.setdefault(
                    delta.index, {"id": delta.id, "type": "function", "function": {"name": "", "arguments": ""}}
                )
                call["function"]["name"] += (delta.function and delta.function.name) or ""
                call["function"]["arguments"] += (delta.function and delta.function.arguments) or ""
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def chat_episode(base_url: str, stream: bool, **options: Any) -> int:
    """A tool loop over chat completions until the model stops calling; returns the calls made."""
    model = client(base_url, **options)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Let's play."}]
    for made in range(1, 10):
        message = chat_turn(model, messages, stream)
        messages.append(message)
        if not message.get("tool_calls"):
            return made
        for call in message["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"marks {len(messages)}"})
    raise AssertionError("the episode did not end")


def response_episode(base_url: str, stream: bool) -> int:
    """The same loop over the Responses API."""
    model = client(base_url)
    items: list[dict[str, Any]] = [{"role": "user", "content": "Let's play."}]
    for made in range(1, 10):
        if stream:
            events = list(model.responses.create(model="scripted", input=items, tools=RESPONSE_TOOLS, stream=True))
            (answer,) = [event.response for event in events if event.type == "response.completed"]
            deltas = [event for event in events if event.type == "response.output_text.delta"]
            assert all(not delta.logprobs for delta in deltas)
            whole = [event.item for event in events if event.type.startswith("response.output_item.")]
            assert all(not getattr(part, "logprobs", None) for i in whole if i.type == "message" for part in i.content)
        else:
            answer = model.responses.create(model="scripted", input=items, tools=RESPONSE_TOOLS)
        assert not {"input_messages", "output_messages"} & set(answer.model_extra or {})
        calls = [item for item in answer.output if item.type == "function_call"]
        texts = [part for item in answer.output if item.type == "message" for part in item.content]
        assert all(getattr(part, "logprobs", None) is None for part in texts)
        if not calls:
            return made
        for call in calls:
            items.append(
                {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
            )
            items.append({"type": "function_call_output", "call_id": call.call_id, "output": f"marks {len(items)}"})
    raise AssertionError("the episode did not end")


def assert_exact(calls: list[ModelCall], produced: list[Produced]) -> None:
    """The records hold the server's tokens, call by call, and chain into one token stream."""
    assert [c.index for c in calls] == list(range(len(produced)))
    assert [c.prompt_token_ids for c in calls] == [p.prompt_token_ids for p in produced]
    assert [c.completion_token_ids for c in calls] == [p.completion_token_ids for p in produced]
    for before, after in itertools.pairwise(calls):  # each prompt extends the last prompt + completion
        assert before.prompt_token_ids is not None and before.completion_token_ids is not None
        sampled = before.prompt_token_ids + before.completion_token_ids
        assert after.prompt_token_ids is not None and after.prompt_token_ids[: len(sampled)] == sampled
    assert all(c.completion_token_ids and c.completion_token_ids[-1] == ScriptedTokens.END for c in calls)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_chat_episode_is_captured_token_exact(
    upstream: tuple[Starlette, str], proxy: CaptureProxy, stream: bool
) -> None:
    made = chat_episode(proxy.episode_url("ep-1"), stream)
    calls = proxy.calls("ep-1")
    assert made == TURNS + 1 == len(calls)
    assert_exact(calls, upstream[0].state.produced)
    assert [c.logprobs for c in calls] == [p.logprobs for p in upstream[0].state.produced]
    assert all(c.logprobs is not None and len(c.logprobs) == len(c.completion_token_ids or ()) for c in calls)
    assert [c.finish_reason for c in calls] == ["tool_calls"] * TURNS + ["stop"]
    assert all(c.missing is None and c.streamed is stream and c.api == "chat" and c.latency_s > 0 for c in calls)
    assert all(c.usage["prompt_tokens"] == len(c.prompt_token_ids or ()) for c in calls)
    first = calls[0]
    assert "return_token_ids" not in first.request and "logprobs" not in first.request  # as the harness sent it
    assert "prompt_token_ids" not in first.response and first.response["choices"][0].get("logprobs") is None
    assert first.response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "guess"
    assert ModelCall.from_dict(json.loads(json.dumps(first.to_dict()))) == first


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_responses_episode_is_captured_token_exact(
    upstream: tuple[Starlette, str], proxy: CaptureProxy, stream: bool
) -> None:
    made = response_episode(proxy.episode_url("ep-r"), stream)
    calls = proxy.calls("ep-r")
    produced = upstream[0].state.produced
    assert made == TURNS + 1 == len(calls)
    assert_exact(calls, produced)
    assert all(c.api == "responses" and c.streamed is stream and c.finish_reason == "completed" for c in calls)
    # vLLM's Responses API puts log-probabilities on output text only: the closing words have them,
    # one per completion token; the tool-call turns have none, and say why.
    *tool_turns, words = calls
    assert words.logprobs == produced[-1].logprobs and words.missing is None
    assert words.logprobs is not None and len(words.logprobs) == len(words.completion_token_ids or ())
    assert all(c.logprobs is None and "output text only" in (c.missing or "") for c in tool_turns)
    assert "input_messages" not in words.response and words.response["output"][0]["content"][0]["logprobs"] is None


def test_episodes_are_kept_apart_by_url_and_by_header(upstream: tuple[Starlette, str], proxy: CaptureProxy) -> None:
    chat_episode(proxy.episode_url("by url"), stream=False)
    chat_episode(proxy.base_url, stream=True, default_headers={EPISODE_HEADER: "by-header"})
    chat_episode(proxy.base_url, stream=False)  # no episode named
    by_url, by_header, unnamed = proxy.calls("by url"), proxy.calls("by-header"), proxy.calls(None)
    assert len(by_url) == len(by_header) == len(unnamed) == TURNS + 1
    assert [c.index for c in by_header] == list(range(TURNS + 1)) and all(c.episode == "by-header" for c in by_header)
    produced = upstream[0].state.produced  # the three episodes ran one after the other
    for n, calls in enumerate((by_url, by_header, unnamed)):
        assert_exact(calls, produced[n * (TURNS + 1) : (n + 1) * (TURNS + 1)])
    assert set(proxy.episodes()) == {"by url", "by-header", None}
    assert proxy.drain("by url") == by_url and proxy.calls("by url") == []
    chat_episode(proxy.episode_url("by url"), stream=False)
    assert [c.index for c in proxy.calls("by url")] == list(range(TURNS + 1, 2 * TURNS + 2))  # numbering goes on
    proxy.forget("by-header")
    chat_episode(proxy.base_url, stream=False, default_headers={EPISODE_HEADER: "by-header"})
    assert [c.index for c in proxy.calls("by-header")] == list(range(TURNS + 1))  # a forgotten name starts again


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_upstream_without_token_ids_is_recorded_as_missing(stream: bool) -> None:
    with running(create_app(responder, tokens=False)) as url, CaptureProxy(f"{url}/v1") as proxy:
        chat_episode(proxy.episode_url("plain"), stream)
        response_episode(proxy.episode_url("plain"), stream)
        calls = proxy.calls("plain")
    assert len(calls) == 2 * (TURNS + 1)
    assert all(c.prompt_token_ids is None and c.completion_token_ids is None and c.logprobs is None for c in calls)
    assert all(
        "returned no prompt token ids, completion token ids, log-probabilities" in (c.missing or "") for c in calls
    )
    assert [c.finish_reason for c in calls[: TURNS + 1]] == ["tool_calls"] * TURNS + ["stop"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_upstream_error_passes_through_and_is_not_recorded(stream: bool) -> None:
    with running(create_app(responder, faults=Faults(error_every=1))) as url, CaptureProxy(f"{url}/v1") as proxy:
        model = client(proxy.episode_url("failing"))
        with pytest.raises(openai.InternalServerError) as failed:
            model.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}], stream=stream)
        with pytest.raises(openai.InternalServerError):
            model.responses.create(model="scripted", input="hi", stream=stream)
        assert failed.value.status_code == 500 and "injected failure" in str(failed.value)
        assert proxy.calls("failing") == [] and proxy.episodes() == []


ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def bare_upstream(handle: ASGIApp) -> ASGIApp:
    """``handle`` as an ASGI app that answers the lifespan events itself: every HTTP request is its own."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            return await send({"type": "lifespan.shutdown.complete"})
        await handle(scope, receive, send)

    return app


@bare_upstream
async def terabyte_upstream(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An upstream announcing a 1 TB answer, then holding the connection until its client leaves."""
    await receive()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(1 << 40).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"{", "more_body": True})
    await receive()


def assert_calls_fail(proxy: CaptureProxy, status: int, says: str) -> None:
    """A whole and a streamed call through ``proxy`` both get ``status`` saying ``says``; neither is recorded."""
    model = client(proxy.episode_url("failing"))
    for stream in (False, True):
        with pytest.raises(openai.APIStatusError) as failed:
            model.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=stream)
        assert failed.value.status_code == status
        assert says in str(failed.value)
    assert proxy.calls("failing") == []


def test_a_dead_upstream_gets_a_502_that_names_it() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with CaptureProxy(f"http://127.0.0.1:{port}/v1") as proxy:
        assert_calls_fail(proxy, 502, f"upstream http://127.0.0.1:{port} could not be reached")


def test_an_upstream_slower_than_the_timeout_gets_a_504_that_names_it() -> None:
    slow = create_app(responder, faults=Faults(stall_every=1, stall_s=3.0))
    with running(slow) as url, CaptureProxy(f"{url}/v1", timeout=0.3) as proxy:
        assert_calls_fail(proxy, 504, f"upstream {url} did not answer in time")


@pytest.mark.parametrize("length", [20_000, 100_000], ids=["long", "too long"])
def test_a_long_answer_header_passes_and_one_too_long_gets_a_502_that_says_so(length: int) -> None:
    @bare_upstream
    async def long_header(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        headers = [(b"content-type", b"application/json"), (b"x-long", b"a" * length)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b'{"data": []}'})

    with running(long_header) as url, CaptureProxy(f"{url}/v1") as proxy:
        if length < 65_536:
            assert client(proxy.base_url).models.list().data == []
        else:
            assert_calls_fail(proxy, 502, f"upstream {url} sent an answer the proxy cannot read")


def test_credentials_in_the_upstream_url_are_never_sent_and_no_header_is_added_to_the_request() -> None:
    seen: list[dict[str, str]] = []
    answer = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": []}

    @bare_upstream
    async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        seen.append({name.decode(): value.decode() for name, value in scope["headers"]})
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})

    with running(recording) as url, CaptureProxy(url.replace("://", "://user:secret@") + "/v1") as proxy:
        host = url.split("://")[1]
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        import httpx

        with httpx.Client(timeout=10) as harness:
            # the proxy has the whole body before it calls the upstream: nothing is left to expect
            headers = {"x-trace": "t1", "expect": "100-continue"}
            sent = harness.post(f"{proxy.base_url}/chat/completions", json=body, headers=headers)
            assert sent.status_code == 200, sent.text
            # a GET passes through with the harness's headers alone (nothing added but Host)
            harness.get(f"{proxy.base_url}/models", headers={"user-agent": "harness/1"})
    posted, got = seen
    assert "authorization" not in posted and "authorization" not in got
    # asking for a compressed answer would leave the proxy a body it cannot read to record
    assert "accept-encoding" not in posted and "accept-encoding" not in got
    assert "expect" not in posted
    assert posted["host"] == host and posted["x-trace"] == "t1" and posted["content-type"] == "application/json"
    assert got["user-agent"] == "harness/1" and "content-type" not in got and "cookie" not in got


def test_the_harness_gets_what_it_asked_for_and_other_calls_pass_through(proxy: CaptureProxy) -> None:
    model = client(proxy.episode_url("asks"))
    asked = model.chat.completions.create(
        model="scripted",
        messages=[{"role": "user", "content": "hi"}],
        logprobs=True,
        extra_body={"return_token_ids": True},
    )
    assert asked.choices[0].logprobs is not None and asked.choices[0].logprobs.content
    assert asked.model_extra and asked.model_extra["prompt_token_ids"] == proxy.calls("asks")[0].prompt_token_ids
    chunks = list(
        model.chat.completions.create(
            model="scripted",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == len(
        proxy.calls("asks")[1].logprobs or ()
    )
    assert [m.id for m in model.models.list()] == ["scripted"]


def refusing_upstream(seen: list[dict[str, Any]]) -> Starlette:
    """An upstream that takes OpenAI's own fields only, as OpenAI's API does: any other gets a 400 naming it."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append(body)
        unknown = sorted(set(body) - {"model", "messages", "max_tokens", "logprobs", "stream", "stream_options"})
        if unknown:
            refusal = f"Unrecognized request argument supplied: {unknown[0]}"
            return JSONResponse({"error": {"message": refusal, "type": "invalid_request_error"}}, 400)
        if body.get("max_tokens") == 0:
            return JSONResponse({"error": {"message": "max_tokens must be at least 1", "type": "invalid"}}, 422)
        choice = {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}
        usage = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
        return JSONResponse(
            {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice], "usage": usage}
        )

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def test_an_upstream_that_refuses_the_token_fields_gets_the_harness_s_own_calls() -> None:
    seen: list[dict[str, Any]] = []
    with running(refusing_upstream(seen)) as url, CaptureProxy(f"{url}/v1") as proxy:
        model = client(proxy.episode_url("refused"))
        hello = [{"role": "user", "content": "hi"}]
        for _ in range(2):
            answer = model.chat.completions.create(model="m", messages=hello)  # type: ignore[arg-type]
            assert answer.choices[0].message.content == "hello"
        with pytest.raises(openai.UnprocessableEntityError):  # the harness's own mistake passes through
            model.chat.completions.create(model="m", messages=hello, max_tokens=0)  # type: ignore[arg-type]
        calls = proxy.calls("refused")
        assert proxy.app.request_tokens is False and "400" in (proxy.app.refusal or "")
    # asked once with vLLM's fields (refused), then the harness's own bodies, each sent once
    assert ["return_token_ids" in body for body in seen] == [True, False, False, False]
    assert seen[1:] == [{"model": "m", "messages": hello}] * 2 + [{"model": "m", "messages": hello, "max_tokens": 0}]
    assert len(calls) == 2 and all(c.prompt_token_ids is None and c.finish_reason == "stop" for c in calls)
    assert all("refused vLLM's token fields (400" in (c.missing or "") for c in calls)
    assert all("Unrecognized request argument supplied: return_token_ids" in (c.missing or "") for c in calls)


def test_a_harness_s_own_bad_call_whose_error_names_a_token_field_leaves_capture_on() -> None:
    """vLLM's 400 for ``top_logprobs`` over its limit names ``logprobs``, a field the proxy adds: it
    was taken for a refusal of the token fields, and every later call of every episode went without them."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        if body.get("top_logprobs", 0) > 5:
            return JSONResponse({"error": {"message": "top_logprobs must be at most 5 with logprobs"}}, 400)
        choice = {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}
        if body.get("return_token_ids") and body.get("logprobs"):
            choice |= {"token_ids": [9], "logprobs": {"content": [{"token": "hello", "logprob": -0.5}]}}
        return JSONResponse({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]})

    upstream = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    with running(upstream) as url, CaptureProxy(f"{url}/v1") as proxy:
        model, hello = client(proxy.episode_url("e")), [{"role": "user", "content": "hi"}]
        with pytest.raises(openai.BadRequestError):
            model.chat.completions.create(model="m", messages=hello, top_logprobs=20)  # type: ignore[arg-type]
        model.chat.completions.create(model="m", messages=hello)  # type: ignore[arg-type]
        (call,) = proxy.calls("e")
        assert proxy.app.request_tokens and proxy.app.refusal is None
    assert call.completion_token_ids == [9] and call.logprobs == [-0.5]


def test_a_harness_that_leaves_mid_stream_ends_the_upstream_call_and_is_not_recorded() -> None:
    """The model sends one event, then would go on generating until its client leaves: when the
    harness leaves, the proxy closes its own connection upstream (which is how a server learns to
    stop generating), without waiting for the model's next event."""
    import httpx

    closed = threading.Event()
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    chunk["choices"] = [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None}]

    @bare_upstream
    async def generating(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": f"data: {json.dumps(chunk)}\n\n".encode(), "more_body": True})
        if (await receive())["type"] == "http.disconnect":  # nothing more comes until the client has gone
            closed.set()

    with running(generating) as url, CaptureProxy(f"{url}/v1") as proxy:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        with httpx.Client(timeout=10) as harness:
            with harness.stream("POST", f"{proxy.episode_url('left')}/chat/completions", json=body) as answer:
                first = next(answer.iter_lines())
        assert json.loads(first.removeprefix("data: "))["choices"][0]["delta"]["content"] == "hi"
        assert closed.wait(10), "the proxy kept the upstream call open after the harness had gone"
        assert proxy.calls("left") == []
