"""A gated capture proxy (the agent runner's): each episode on a secret URL, refused once closed.

Harnesses of concurrent episodes share one proxy. Episode names are guessable (``episode-N``), so
a harness that could name another episode would add its own calls to that episode's training
record; a gated proxy serves only the keys it handed out, and none after the episode is closed.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

from omnienv.capture import EPISODE_HEADER, CaptureProxy
from omnienv.rollout.scripted_openai import Faults, Reply, create_app
from omnienv.server import running
from tests.capture.test_proxy import bare_upstream

BODY = {"model": "scripted", "messages": [{"role": "user", "content": "Hello"}]}


@pytest.fixture
def proxy() -> Iterator[CaptureProxy]:
    with running(create_app(lambda messages: [])) as upstream, CaptureProxy(f"{upstream}/v1", gated=True) as capture:
        yield capture


def post(url: str, **options: Any) -> int:
    return httpx.post(f"{url}/chat/completions", json=BODY, timeout=30, **options).status_code


def test_only_an_open_episodes_secret_url_is_served(proxy: CaptureProxy) -> None:
    url = proxy.open_episode("episode-0")
    assert url.startswith(f"{proxy.url}/episodes/") and "episode-0" not in url
    assert post(url) == 200
    key = url.split("/episodes/")[1].split("/")[0]
    assert post(proxy.base_url, headers={EPISODE_HEADER: key}) == 200  # the key in the header works too
    refused = [
        proxy.episode_url("episode-0"),  # the episode's name is no key
        proxy.base_url,  # a call that names no episode
    ]
    assert [post(guess) for guess in refused] == [404, 404]
    assert post(proxy.base_url, headers={EPISODE_HEADER: "episode-0"}) == 404
    assert httpx.get(f"{proxy.episode_url('episode-0')}/models", timeout=30).status_code == 404
    proxy.close_episode("episode-0")
    assert post(url) == 404  # over: its own URL is refused
    calls = proxy.drain("episode-0")
    assert [call.index for call in calls] == [0, 1] and all(call.episode == "episode-0" for call in calls)
    assert proxy.episodes() == []


def test_a_call_still_running_when_its_episode_closes_is_not_recorded() -> None:
    """The runner closes an episode once its harness is reaped, so what finishes later is a
    leftover's: kept, it would sit in the log for good (no one drains it again)."""
    arrived, release = threading.Event(), threading.Event()

    def responder(messages: list[dict[str, Any]]) -> Reply:
        arrived.set()
        release.wait(30)
        return []

    with running(create_app(responder)) as upstream, CaptureProxy(f"{upstream}/v1", gated=True) as proxy:
        url = proxy.open_episode("episode-1")
        with ThreadPoolExecutor(1) as pool:
            late = pool.submit(post, url)
            assert arrived.wait(30)  # the call is past the gate, at the model
            proxy.close_episode("episode-1")
            release.set()
            assert late.result() == 200
        assert proxy.drain("episode-1") == [] and proxy.episodes() == []


def test_the_model_servers_failure_of_an_episodes_last_call_is_kept_until_a_call_is_recorded() -> None:
    with (
        running(create_app(lambda messages: [], Faults(error_every=2))) as upstream,
        CaptureProxy(f"{upstream}/v1", gated=True) as proxy,
    ):
        url = proxy.open_episode("episode-2")
        assert post(url) == 200 and proxy.log.failure("episode-2") is None
        assert post(url) == 500 and "answered 500" in (proxy.log.failure("episode-2") or "")
        assert post(url) == 200 and proxy.log.failure("episode-2") is None
    with CaptureProxy("http://127.0.0.1:9/v1", gated=True) as proxy:  # nothing listens there
        assert post(proxy.open_episode("episode-3")) == 502
        assert "failed the call" in (proxy.log.failure("episode-3") or "")
        assert len(proxy.drain("episode-3")) == 0 and proxy.log.failure("episode-3") is None


def test_a_gated_proxy_forwards_no_call_it_would_not_record() -> None:
    """A model server has other routes under /v1 (vLLM's /v1/completions, whose calls would be missing
    from the record, or /v1/load_lora_adapter, which changes the model of every episode): through
    a gated proxy a harness reaches the two it records, and reads (GET) the rest."""
    reached: list[str] = []
    upstream = create_app(lambda messages: [])

    async def admin(request: Request) -> JSONResponse:
        reached.append(request.url.path)
        return JSONResponse({"ok": True})

    for route in ("/v1/load_lora_adapter", "/v1/completions"):
        upstream.add_route(route, admin, methods=["POST"])
    with running(upstream) as url, CaptureProxy(f"{url}/v1", gated=True) as proxy:
        base = proxy.open_episode("episode-4")
        for route in ("load_lora_adapter", "completions"):
            answer = httpx.post(f"{base}/{route}", json={"lora_name": "x", "prompt": "hi"}, timeout=30)
            assert answer.status_code == 404 and "records" in answer.json()["error"]["message"]
        assert httpx.get(f"{base}/models", timeout=30).status_code == 200
        assert post(base) == 200
    assert reached == []


def test_a_gated_proxy_forwards_no_model_call_whose_body_it_cannot_read() -> None:
    """A compressed body (or one that is no JSON object) went upstream unrecorded: an upstream that
    reads it answers a model call missing from the record."""
    reached: list[bytes] = []

    @bare_upstream
    async def reader(scope: dict[str, Any], receive: Any, send: Any) -> None:
        reached.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with running(reader) as url, CaptureProxy(f"{url}/v1", gated=True) as proxy:
        base = proxy.open_episode("episode-5")
        for content, encoding in ((gzip.compress(body), "gzip"), (b"[1]", "identity")):
            headers = {"content-type": "application/json", "content-encoding": encoding}
            answer = httpx.post(f"{base}/chat/completions", content=content, headers=headers, timeout=30)
            assert answer.status_code == 404 and "records" in answer.json()["error"]["message"]
        assert post(base) == 200 and len(proxy.calls("episode-5")) == 1
    assert len(reached) == 1 and b'"return_token_ids"' in reached[0]  # only the call it recorded
