"""An OpenAI-compatible capture proxy: forwards a harness's model calls and records their tokens.

A loop-owning agent makes its own model calls; pointing its base URL at this proxy is all it takes
to have every call recorded as a :class:`~omnienv.capture.calls.ModelCall` with the exact token
ids and log-probabilities the inference server produced (see :mod:`omnienv.capture.wire` for
which fields are asked for and taken out again). Calls belong to an episode named in the base URL
(``/episodes/{episode}/v1``) or in an ``X-Omnienv-Episode`` header, so the harness needs no change.

The proxy never tokenises: when the upstream returns no ids, the record says so in ``missing``.
An upstream error passes through with its status and is not recorded; an upstream that cannot be
reached gets a 502 (a timeout a 504) that says which upstream it was.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from omnienv.capture.calls import Api, ModelCall
from omnienv.capture.log import CallLog
from omnienv.capture.stream import ChatStream, ResponseStream, events
from omnienv.capture.wire import (
    Asked,
    Tokens,
    ask_chat,
    ask_responses,
    chat_tokens,
    response_tokens,
    strip_chat,
    strip_response,
)

__all__ = ["EPISODE_HEADER", "CaptureProxy", "create_proxy_app"]

EPISODE_HEADER = "X-Omnienv-Episode"
# Never forwarded: hop-by-hop headers, the ones httpx sets from the body it sends, and our own.
_DROPPED = frozenset(
    {b"host", b"content-length", b"connection", b"keep-alive", b"transfer-encoding", b"accept-encoding", b"upgrade"}
    | {b"te"}
)
_EPISODE_KEY = EPISODE_HEADER.lower().encode()
_JSON = (b"content-type", b"application/json")


def _error(status: int, message: str, kind: str) -> Response:
    return Response(orjson.dumps({"error": {"message": message, "type": kind}}), status, media_type="application/json")


def create_proxy_app(
    upstream: str, log: CallLog, *, request_tokens: bool = True, timeout: float = 600.0, connections: int = 1024
) -> Starlette:
    """The proxy as an ASGI app. ``upstream`` is the base URL a client would use (``.../v1``, or
    the server root). ``request_tokens=False`` forwards bodies unchanged, for an upstream that
    rejects vLLM's fields; the records then hold whatever token fields the harness asked for."""
    root = upstream.rstrip("/").removesuffix("/v1")
    state: dict[str, httpx.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # One client for the app's life: its pooled connections are what keeps the added latency low.
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=10.0), limits=limits) as client:
            state["client"] = client
            yield

    def target(request: Request) -> tuple[str, str | None, list[tuple[bytes, bytes]]]:
        # Read from the raw ASGI scope: building Starlette's URL and header views costs more than the rest.
        episode = request.path_params.get("episode")
        headers = []
        for name, value in request.scope["headers"]:  # lower-case already, by the ASGI spec
            if name == _EPISODE_KEY:
                episode = episode or value.decode("latin-1") or None
            elif name not in _DROPPED:
                headers.append((name, value))
        url = f"{root}/v1/{request.path_params['path']}"
        query = request.scope.get("query_string", b"")
        return (f"{url}?{query.decode('latin-1')}" if query else url), episode, headers

    def unreachable(exc: httpx.HTTPError) -> Response:
        if isinstance(exc, httpx.TimeoutException):
            return _error(
                504, f"capture proxy: the upstream {root} did not answer in time ({exc!r})", "upstream_timeout"
            )
        return _error(502, f"capture proxy: the upstream {root} could not be reached ({exc!r})", "upstream_unreachable")

    async def passthrough(request: Request) -> Response:
        url, _, headers = target(request)
        try:
            answer = await state["client"].request(request.method, url, content=await request.body(), headers=headers)
        except httpx.HTTPError as exc:
            return unreachable(exc)
        return Response(answer.content, answer.status_code, media_type=answer.headers.get("content-type"))

    async def capture(request: Request) -> Response:
        started = time.perf_counter()
        api: Api = "chat" if request.path_params["path"] == "chat/completions" else "responses"
        raw = await request.body()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):  # not ours to judge: the upstream answers it
            return await passthrough(request)
        sent, asked = (ask_chat if api == "chat" else ask_responses)(body, request_tokens)
        url, episode, headers = target(request)
        if not any(name == b"content-type" for name, _ in headers):
            headers.append(_JSON)
        client = state["client"]
        upstream_request = httpx.Request("POST", url, content=orjson.dumps(sent), headers=headers)
        try:
            answer = await client.send(upstream_request, stream=bool(body.get("stream")))
        except httpx.HTTPError as exc:
            return unreachable(exc)

        def record(response: dict[str, Any], tokens: Tokens, streamed: bool) -> None:
            log.add(
                ModelCall(
                    episode=episode,
                    api=api,
                    request=body,
                    response=response,
                    prompt_token_ids=tokens.prompt,
                    completion_token_ids=tokens.completion,
                    logprobs=tokens.logprobs,
                    finish_reason=tokens.finish_reason,
                    usage=tokens.usage,
                    latency_s=time.perf_counter() - started,
                    streamed=streamed,
                    missing=tokens.missing(),
                )
            )

        if not body.get("stream"):
            media = answer.headers.get("content-type", "application/json")
            if answer.status_code >= 400:
                return Response(answer.content, answer.status_code, media_type=media)
            try:
                data = orjson.loads(answer.content)
            except orjson.JSONDecodeError:
                return Response(answer.content, answer.status_code, media_type=media)
            if api == "chat":
                tokens = chat_tokens(data)
                strip_chat(data, asked)
            else:
                tokens = response_tokens(data)
                strip_response(data, asked)
            record(data, tokens, False)
            return Response(orjson.dumps(data), answer.status_code, media_type="application/json")

        if answer.status_code >= 400:
            content = await answer.aread()
            await answer.aclose()
            return Response(content, answer.status_code, media_type=answer.headers.get("content-type"))
        return StreamingResponse(_relay(answer, api, asked, record), answer.status_code, media_type="text/event-stream")

    async def endpoint(request: Request) -> Response:
        """Chat completions and responses are captured; every other ``/v1`` call (models...) passes through."""
        if request.method == "POST" and request.path_params["path"] in ("chat/completions", "responses"):
            return await capture(request)
        return await passthrough(request)

    methods = ["GET", "POST", "DELETE"]
    routes = [Route(prefix + "/v1/{path:path}", endpoint, methods=methods) for prefix in ("", "/episodes/{episode}")]
    return Starlette(routes=routes, lifespan=lifespan)


async def _relay(
    answer: httpx.Response, api: Api, asked: Asked, record: Callable[[dict[str, Any], Tokens, bool], None]
) -> AsyncIterator[bytes]:
    """Pass a streamed answer on event by event and record it, unless it failed or was cut off.

    The record is made before the last event (``[DONE]``, ``response.completed``) is passed on,
    so a harness that has its whole answer finds its call recorded."""
    chat, responses = ChatStream(asked), ResponseStream(asked)
    recorded = False

    def finish() -> None:
        nonlocal recorded
        if recorded:
            return
        recorded = True
        finished = any(choice["finish_reason"] is not None for choice in chat.choices.values())
        if api == "chat" and chat.error is None and finished:
            record(*chat.finish(), True)
        elif api == "responses" and responses.error is None and responses.final and responses.tokens:
            record(responses.final, responses.tokens, True)

    try:
        async for event in events(answer.aiter_bytes()):
            if event.data is None or event.data == b"[DONE]":
                if event.data == b"[DONE]":
                    finish()
                yield event.encode()
                continue
            try:
                data = orjson.loads(event.data)
            except orjson.JSONDecodeError:
                yield event.encode()
                continue
            forward = chat.feed(data) if api == "chat" else responses.feed(data)
            if responses.final is not None:
                finish()
            if forward is not None:
                yield event.encode(forward)
        finish()  # a stream that ended cleanly without its closing event
    finally:
        await answer.aclose()


class CaptureProxy(AbstractContextManager["CaptureProxy"]):
    """The capture proxy served on ``host`` (a free port) for as long as the ``with`` block runs.

    ``with CaptureProxy("http://127.0.0.1:8000/v1") as proxy:`` then point a harness at
    ``proxy.episode_url("ep-1")`` and read ``proxy.calls("ep-1")`` when it is done.
    """

    def __init__(
        self,
        upstream: str,
        *,
        host: str = "127.0.0.1",
        request_tokens: bool = True,
        timeout: float = 600.0,
        on_call: Callable[[ModelCall], None] | None = None,
    ) -> None:
        self.upstream = upstream
        self.host = host
        self.log = CallLog(on_call)
        self.app = create_proxy_app(upstream, self.log, request_tokens=request_tokens, timeout=timeout)
        self._serving: AbstractContextManager[str] | None = None
        self._url: str | None = None

    def __enter__(self) -> CaptureProxy:
        from omnienv.server import running

        self._serving = running(self.app, self.host)
        self._url = self._serving.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        serving, self._serving, self._url = self._serving, None, None
        if serving is not None:
            serving.__exit__(kind, error, trace)

    @property
    def url(self) -> str:
        """The proxy's root (``http://127.0.0.1:PORT``)."""
        if self._url is None:
            raise RuntimeError("the capture proxy is not running: use it in a `with` block")
        return self._url

    @property
    def base_url(self) -> str:
        """The OpenAI base URL for calls that name their episode in a header (or none)."""
        return f"{self.url}/v1"

    def episode_url(self, episode: str) -> str:
        """The OpenAI base URL whose calls all belong to ``episode``."""
        return f"{self.url}/episodes/{quote(episode, safe='')}/v1"

    def calls(self, episode: str | None) -> list[ModelCall]:
        return self.log.calls(episode)

    def drain(self, episode: str | None) -> list[ModelCall]:
        return self.log.drain(episode)

    def forget(self, episode: str | None) -> None:
        self.log.forget(episode)

    def episodes(self) -> list[str | None]:
        return self.log.episodes()
