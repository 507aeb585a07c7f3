"""The capture proxy as a bare ASGI app: one short path per call, from the harness to the upstream and back.

The proxy sits on every model call of every episode, so its own cost is kept to the work only it
can do: read the body once (orjson), ask for the token fields, forward on a kept-alive connection
(:mod:`omnienv.capture.upstream`), read the answer once, record it, take the asked-for fields out
and write the answer once. There is no router, middleware or request object: the path is split
by hand (``/v1/...`` or ``/episodes/{episode}/v1/...``) and everything else is read from the raw
ASGI scope. A streamed answer is passed on as it arrives, all that has arrived going to the harness
in one write.

A call is recorded before the harness gets the last byte of its answer, so a harness that has its
answer finds its call in the log. An upstream error passes through unrecorded; a stream that fails
or is cut off is not recorded either, nor is an answer whose harness went away before it came (it
timed out, and may have retried): the record holds only what the harness got. An answer the
harness got but the proxy cannot read as a JSON object is recorded with ``missing`` saying so, so
the episode's record is not trainable rather than silently short of a turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote

import orjson

from omnienv.capture.calls import Api, ModelCall
from omnienv.capture.log import CallLog
from omnienv.capture.stream import ChatStream, Event, EventReader, ResponseStream
from omnienv.capture.upstream import MALFORMED, TIMED_OUT, UNREACHABLE, Answer, Upstream
from omnienv.capture.wire import (
    Asked,
    Tokens,
    ask_chat,
    ask_responses,
    chat_tokens,
    dumps_as_read,
    loads_leniently,
    refuses_token_fields,
    response_tokens,
    strip_chat,
    strip_response,
)

__all__ = ["EPISODE_HEADER", "SERVER_OPTIONS", "ProxyApp"]

logger = logging.getLogger("omnienv.capture")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Record = Callable[[dict[str, Any], Tokens, bool], None]

EPISODE_HEADER = "X-Omnienv-Episode"
SERVER_OPTIONS: dict[str, Any] = {"proxy_headers": False, "access_log": False}
"""uvicorn settings for serving the proxy: it reads no forwarding headers and logs no line per call."""
_EPISODE_KEY = EPISODE_HEADER.lower().encode()
# Never forwarded: hop-by-hop headers, the ones set from the body that is sent, and our own. The
# harness's "Expect: 100-continue" was answered here: the body is read whole before it is sent on.
_DROPPED = frozenset(
    {b"host", b"content-length", b"connection", b"keep-alive", b"transfer-encoding", b"accept-encoding", b"upgrade"}
    | {b"te", b"expect", _EPISODE_KEY}
)
_KEPT_ANSWER_HEADERS = (b"content-type", b"content-encoding")
_CAPTURED: dict[bytes, Api] = {b"/v1/chat/completions": "chat", b"/v1/responses": "responses"}
_EPISODES = b"/episodes/"
_JSON = b"application/json"


async def _reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """A whole answer: its head, then its body (uvicorn writes each as it comes)."""
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _error(status: int, message: str, kind: str) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    return status, orjson.dumps({"error": {"message": message, "type": kind}}), [(b"content-type", _JSON)]


def _kept(answer: Answer) -> list[tuple[bytes, bytes]]:
    return [(name.lower(), value) for name, value in answer.headers if name.lower() in _KEPT_ANSWER_HEADERS]


async def _request_body(receive: Receive) -> bytes | None:
    """The whole request body; None when the harness went away before sending it."""
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return parts[0] if len(parts) == 1 else b"".join(parts)


class _Relay:
    """A streamed answer passed on event by event and assembled on the side for the record.

    The record is made before the last event (``[DONE]``, ``response.completed``) is passed on;
    a stream that failed (an error event) or ended before its answer did is not recorded."""

    def __init__(self, api: Api, asked: Asked, record: Record) -> None:
        self.api = api
        self.chat, self.responses = ChatStream(asked), ResponseStream(asked)
        self.reader = EventReader()
        self.record = record
        self.recorded = False
        self.failure: str | None = None
        """Why the stream was not recorded: the upstream failed it (an error event) or ended it early."""

    def _finish(self) -> None:
        if self.recorded:
            return
        self.recorded = True
        chat, responses = self.chat, self.responses
        if chat.error is not None or responses.error is not None:
            self.failure = "the model server ended the stream with an error"  # its text may echo a key
        elif self.api == "chat" and any(choice["finish_reason"] is not None for choice in chat.choices.values()):
            self.record(*chat.finish(), True)
        elif self.api == "responses" and responses.final and responses.tokens:
            self.record(responses.final, responses.tokens, True)
        else:
            self.failure = "the model server's stream ended before its answer did"

    def feed(self, chunk: bytes) -> bytes:
        """What to pass on of the events this chunk completes."""
        return self._forward(self.reader.feed(chunk))

    def end(self) -> bytes:
        """The rest, once the upstream's stream has ended (recording a stream that ended without its closing event)."""
        out = self._forward(self.reader.end())
        self._finish()
        return out

    def _forward(self, events: list[Event]) -> bytes:
        out = []
        for event in events:
            if event.data is None or event.data == b"[DONE]":
                if event.data == b"[DONE]":
                    self._finish()
                out.append(event.encode())
                continue
            data = loads_leniently(event.data)  # an event only Python's json reads is read, as a whole answer is
            if not isinstance(data, dict):
                out.append(event.encode())
                continue
            forward = self.chat.feed(data) if self.api == "chat" else self.responses.feed(data)
            if self.responses.final is not None:
                self._finish()
            if forward is not None:
                out.append(event.encode(forward))
        return b"".join(out)


class ProxyApp:
    """The capture proxy's ASGI app; see :func:`omnienv.capture.proxy.create_proxy_app`."""

    def __init__(
        self,
        upstream: str,
        log: CallLog,
        *,
        request_tokens: bool = True,
        timeout: float = 600.0,
        connections: int = 1024,
    ) -> None:
        self.upstream = Upstream(upstream, timeout=timeout, connections=connections)
        self.root = self.upstream.root
        """The upstream as messages name it, without the credentials its URL may hold."""
        self.timeout = timeout
        self.log = log
        self.request_tokens = request_tokens
        self.refusal: str | None = None
        """Why the upstream refused vLLM's token fields (its answer), once it has; calls then go unchanged."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.upstream.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        path: bytes = scope.get("raw_path") or scope["path"].encode()
        episode = None
        if path.startswith(_EPISODES):
            name, _, path = path[len(_EPISODES) :].partition(b"/")
            episode = unquote(name.decode("latin-1")) or None
            path = b"/" + path if episode is not None else b""
        if not path.startswith(b"/v1/"):
            message = "capture proxy: no such route (OpenAI calls go to /v1/... or /episodes/EPISODE/v1/...)"
            return await _reply(send, *_error(404, message, "not_found"))
        headers = []
        for name, value in scope["headers"]:  # lower-case already, by the ASGI spec
            if name == _EPISODE_KEY:
                episode = episode or value.decode("latin-1") or None
            elif name not in _DROPPED:
                headers.append((name, value))
        try:
            episode = self.log.episode_of(episode)
        except LookupError:
            message = "capture proxy: no such episode (it is over, or its URL is wrong)"
            return await _reply(send, *_error(404, message, "not_found"))
        query = scope.get("query_string")
        target = path + b"?" + query if query else path
        body = await _request_body(receive)
        if body is None:
            return
        api = _CAPTURED.get(path) if scope["method"] == "POST" else None
        request = loads_leniently(body) if api is not None else None
        if not isinstance(request, dict):  # no call it can record (a body compressed, or no JSON object)
            api = None
        if api is None and self.log.gated and scope["method"] not in ("GET", "HEAD"):
            message = "capture proxy: only the calls it records (chat completions, responses) and reads reach the model"
            return await _reply(send, *_error(404, message, "not_found"))
        if api is None or not isinstance(request, dict):  # not ours to judge: the upstream answers it
            return await self._pass(send, scope["method"].encode(), target, headers, body)
        gone = asyncio.ensure_future(receive())  # after the body, only the harness leaving ends this
        try:
            await self._capture(send, gone, api, (request, body), target, headers, episode, started)
        finally:
            gone.cancel()

    def _unreachable(self, exc: Exception) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        if isinstance(exc, TIMED_OUT):
            message = f"capture proxy: the upstream {self.root} did not answer in time ({exc!r})"
            return _error(504, message, "upstream_timeout")
        if isinstance(exc, MALFORMED):
            message = f"capture proxy: the upstream {self.root} sent an answer the proxy cannot read ({exc!r})"
            return _error(502, message, "upstream_malformed")
        message = f"capture proxy: the upstream {self.root} could not be reached ({exc!r})"
        return _error(502, message, "upstream_unreachable")

    async def _pass(
        self, send: Send, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        try:
            answer = await self.upstream.send(method, target, headers, body)
            try:
                content = await answer.aread()
            finally:
                await answer.aclose()
        except UNREACHABLE as exc:
            return await _reply(send, *self._unreachable(exc))
        await _reply(send, answer.status, content, _kept(answer))

    async def _capture(
        self,
        send: Send,
        gone: asyncio.Future[Message],
        api: Api,
        asking: tuple[dict[str, Any], bytes],
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        episode: str | None,
        started: float,
    ) -> None:
        """Forward one call and record it, unless the harness left before its answer came.

        ``gone`` resolves when the harness leaves (it timed out, and may be retrying): that closes
        the upstream's connection, which ends the read and the model's generation, and nothing is
        recorded, since the harness never got that answer. A whole answer is bounded in all by
        ``timeout`` (the upstream client's timeout is per read, which a trickling server never
        trips); a stream is bounded per read only, as it may rightly go on long."""
        request, body = asking
        sent, asked = (ask_chat if api == "chat" else ask_responses)(request, self.request_tokens)
        if not any(name == b"content-type" for name, _ in headers):
            headers.append((b"content-type", _JSON))
        streamed = bool(request.get("stream"))
        refusal = self.refusal

        def record(response: dict[str, Any], tokens: Tokens, streamed: bool, missing: str | None = None) -> None:
            if refusal is not None and sent is request:
                tokens.notes.append(f"the upstream refused vLLM's token fields ({refusal}): calls go to it unchanged")
            call = self.log.add(
                ModelCall(
                    episode=episode,
                    api=api,
                    request=request,
                    response=response,
                    prompt_token_ids=tokens.prompt,
                    completion_token_ids=tokens.completion,
                    logprobs=tokens.logprobs,
                    finish_reason=tokens.finish_reason,
                    usage=tokens.usage,
                    latency_s=time.perf_counter() - started,
                    streamed=streamed,
                    missing=missing or tokens.missing(),
                )
            )
            if call is not None and call.broken_off:  # recorded (the harness got it), and failed
                self.log.fail(episode, f"the model server broke the call off (finish reason {call.finish_reason!r})")

        answers: list[Answer] = []

        def left(message: asyncio.Future[Message]) -> None:
            if not message.cancelled():
                for answer in answers:
                    answer.abort()

        gone.add_done_callback(left)
        bound = asyncio.timeout(self.timeout)
        answer: Answer | None = None
        try:
            async with bound:
                answer = await self.upstream.send(
                    b"POST", target, headers, body if sent is request else dumps_as_read(sent)
                )
                answers.append(answer)
                if answer.status in (400, 422) and sent is not request:
                    try:
                        content = await answer.aread()
                    finally:
                        await answer.aclose()
                    if not refuses_token_fields(sent, request, content):
                        return await _reply(send, answer.status, content, _kept(answer))
                    refused = f"{answer.status} {content[:300].decode('utf-8', 'replace')}"
                    sent, asked = request, Asked(True, True, True)
                    answer = await self.upstream.send(b"POST", target, headers, body)
                    answers.append(answer)
                    # only a harness's own body that goes through shows the fields were refused: one
                    # refused too (its error merely names one) must not turn capture off for every episode
                    if answer.status < 400:
                        refusal = self.refusal = refused
                        if self.request_tokens:
                            self.request_tokens = False
                            logger.warning("capture proxy: %s refused vLLM's token fields (%s)", self.root, refusal)
                if streamed and answer.status < 400:
                    bound.reschedule(None)
                    return await self._stream(send, gone, answer, _Relay(api, asked, record), episode)
                content = await answer.aread()
            if gone.done():
                return  # the harness left before this answer came: it never got it
            data = loads_leniently(content) if answer.status < 400 else None
            if answer.status >= 400:
                if answer.status >= 500 or answer.status == 429:
                    self.log.fail(episode, f"the model server answered {answer.status}")  # its body may echo a key
                return await _reply(send, answer.status, content, _kept(answer))
            if not isinstance(data, dict):
                why = f"the answer ({len(content):,} bytes) is not a JSON object: its call's tokens are unknown"
                record({}, Tokens(), False, why)
                return await _reply(send, answer.status, content, _kept(answer))
            if api == "chat":
                tokens = chat_tokens(data)
                strip_chat(data, asked)
            else:
                tokens = response_tokens(data)
                strip_response(data, asked)
            record(data, tokens, False)
            await _reply(send, answer.status, dumps_as_read(data), [(b"content-type", _JSON)])
        except UNREACHABLE as exc:
            if not gone.done():  # else the harness left, which broke the read: no one to answer
                self.log.fail(episode, f"the model server {self.root} failed the call ({exc!r})")
                await _reply(send, *self._unreachable(exc))
        finally:
            if answer is not None:
                await answer.aclose()  # once the harness has its answer: off the call's path

    async def _stream(
        self, send: Send, gone: asyncio.Future[Message], answer: Answer, relay: _Relay, episode: str | None
    ) -> None:
        """Pass the events on as they come; stop (closing the upstream's connection, which ends its
        generation) when the harness goes away (``gone``).

        Each read takes all that has arrived, so what came while the last write went out leaves in
        one write (one wake-up of the harness, not one per event), and nothing waits for more to
        arrive; the last events leave with the end of the answer when they came with the upstream's.
        A stream the upstream failed (an error event, an end before the answer's, a broken or timed
        out read) is the model server's failure of the call; a broken one breaks off the harness's
        answer too (its head went out already, so no error status can say so)."""
        kind = next((value for name, value in _kept(answer) if name == b"content-type"), b"text/event-stream")
        await send({"type": "http.response.start", "status": answer.status, "headers": [(b"content-type", kind)]})
        out = b""
        try:
            async for chunk in answer.aiter_stream():
                out = relay.feed(chunk)
                if answer.complete or gone.done():
                    break
                if out:
                    await send({"type": "http.response.body", "body": out, "more_body": True})
                    out = b""
            if not gone.done():
                await send({"type": "http.response.body", "body": out + relay.end()})
        except UNREACHABLE as exc:
            if not gone.done():  # the upstream broke off, not the harness
                self.log.fail(episode, f"the model server {self.root} broke off the stream ({exc!r})")
            return
        if relay.failure is not None and not gone.done():
            self.log.fail(episode, relay.failure)
