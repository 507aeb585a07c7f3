"""A model server that answers what no well-behaved one would, through the real ``openai`` client.

Each server is a bare ASGI app on 127.0.0.1 (``running``), so a test can send exactly the bytes it
means to: a lone surrogate escape, an aborted generation, a body that never ends. The rules under
test: what the server breaks is a flagged failure, never a reward; what the model writes is its
own doing and is scored; one bad episode never stops a run; no failure message carries the API
key or a whole error body.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from omnienv.envs.wordle import Wordle
from omnienv.rollout import plan_episodes, read_episodes, rollout
from omnienv.rollout.llm import ChatPolicy
from omnienv.rollout.trajectory import TRAINER_END
from omnienv.server import running
from tests.capture.test_proxy import bare_upstream, terabyte_upstream

Handle = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


server = bare_upstream  # an ASGI app of one handler, answering the lifespan events itself


def answering(make: Callable[[int], bytes], status: int = 200) -> Handle:
    """A server whose ``n``-th answer (from 0) is ``make(n)``, whole."""
    count = iter(range(1_000_000))

    @server
    async def handle(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        body = make(next(count))
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
        )
        await send({"type": "http.response.body", "body": body})

    return handle


def completion(
    content: str | None = None, name: Any = "guess", arguments: str = '{"word": "crane"}', **choice: Any
) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
    message = {"role": "assistant", "content": content, "tool_calls": [call]}
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls", **choice}],
    }


def play(url: str, episodes: int, out: Path | None = None, resume: bool = False, **options: Any) -> Any:
    def policy() -> ChatPolicy:
        return ChatPolicy("m", Wordle.tools, base_url=f"{url}/v1", max_retries=0, **options)

    return rollout(Wordle, policy, plan_episodes(Wordle, episodes, "test"), out=out, resume=resume, concurrency=2)


def test_a_lone_surrogate_in_a_reply_is_written_and_the_run_goes_on(tmp_path: Path) -> None:
    # "\ud800" is a legal JSON escape that the openai client reads; no UTF-8 writer takes it
    text = json.dumps(completion(content="thinking")).replace('"thinking"', '"thinking \\ud800"').encode()
    out = tmp_path / "run.jsonl"
    with running(answering(lambda n: text)) as url:
        summary = play(url, 3, out, max_model_calls=2)
    episodes = read_episodes(out)
    assert len(episodes) == 3 and summary.episodes == 3 and summary.failures == 0
    assert episodes[0].messages is not None
    assert episodes[0].messages[1]["content"] == "thinking \ufffd"  # sent back to the model as valid text


def test_arguments_with_a_lone_surrogate_are_an_invalid_action_and_written(tmp_path: Path) -> None:
    arguments = '{"word": "cr\\ud800ne"}'
    out = tmp_path / "run.jsonl"
    with running(answering(lambda n: json.dumps(completion(arguments=arguments)).encode())) as url:
        summary = play(url, 1, out, max_model_calls=1)
    (episode,) = read_episodes(out)
    assert summary.failures == 0 and episode.failure is None
    assert "surrogate" in episode.steps[0].result.observation.text


def test_an_unfinished_generation_is_a_model_failure_never_a_reward() -> None:
    aborted = completion(content="", finish_reason="abort")
    aborted["choices"][0]["message"]["tool_calls"] = None
    with running(answering(lambda n: json.dumps(aborted).encode())) as url:
        summary = play(url, 2)
    assert summary.failures == 2 and summary.scored == 0 and summary.stopped == 0


CONTEXT_FULL = {
    "error": {
        "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
        "type": "BadRequestError",
        "code": 400,
    }
}


def refusing_after(answers: int) -> Handle:
    """A server that guesses "crane" ``answers`` times, then refuses the conversation as past the
    model's context window, as vLLM does (a 400)."""
    count = iter(range(1_000_000))

    @server
    async def handle(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        status, body = (200, completion()) if next(count) < answers else (400, CONTEXT_FULL)
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": json.dumps(body).encode()})

    return handle


def test_a_conversation_past_the_context_window_ends_the_episode_scored(tmp_path: Path) -> None:
    """The agent's turns filled the window (say, by flooding its outputs): a turn limit it reached,
    scored as it stands. As a failure it would void the losing episodes of an agent that floods."""
    out = tmp_path / "run.jsonl"
    with running(refusing_after(1)) as url:
        summary = play(url, 1, out)
    (episode,) = read_episodes(out)
    assert summary.failures == 0 and episode.failure is None and episode.truncated
    assert episode.stopped is not None and "context window" in episode.stopped and "4096 tokens" in episode.stopped
    assert [step.call.name for step in episode.steps] == ["guess", TRAINER_END]
    assert "rubric" in episode.steps[-1].result.info


def test_a_first_request_past_the_context_window_is_a_model_failure(tmp_path: Path) -> None:
    """No turn of the agent's yet: the operator's prompt or max_tokens is too long for the model."""
    out = tmp_path / "run.jsonl"
    with running(refusing_after(0)) as url:
        summary = play(url, 1, out)
    (episode,) = read_episodes(out)
    assert summary.failures == 1 and episode.failure is not None and episode.failure.kind == "model"
    assert "maximum context length" in episode.failure.message


def test_an_error_body_is_quoted_short_and_without_the_api_key(tmp_path: Path) -> None:
    key = "sk-very-secret-key"

    def echo(n: int) -> bytes:  # a server that echoes the request's headers in a huge error
        return json.dumps(
            {"error": {"message": f"bad request; Authorization: Bearer {key} " + "x" * 1_000_000}}
        ).encode()

    out = tmp_path / "run.jsonl"
    with running(answering(echo, status=400)) as url:
        summary = play(url, 2, out, api_key=key)
    assert summary.failures == 2
    text = out.read_text()
    assert key not in text and len(text) < 20_000
    (first, _) = read_episodes(out)
    assert first.failure is not None and first.failure.kind == "model" and "status 400" in first.failure.message


def test_malformed_tool_calls_are_the_model_s_and_scored_and_their_run_resumes(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError on it
    answers = [
        completion(arguments=deep),
        completion(name={"not": "a name"}),
        completion(arguments="[1, 2]"),
        completion(arguments="{not json"),
    ]
    out = tmp_path / "run.jsonl"
    with running(answering(lambda n: json.dumps(answers[n % len(answers)]).encode())) as url:
        summary = play(url, 1, out, max_model_calls=4)
    assert summary.failures == 0 and summary.scored == 1
    (episode,) = read_episodes(out)  # non-object arguments read back as written
    assert [step.call.arguments for step in episode.steps[2:4]] == [[1, 2], "{not json"]
    assert episode.steps[4].call.name == TRAINER_END  # its limit of model calls stopped it: ended, scored
    assert "unknown tool" in episode.steps[1].result.observation.text.lower()
    with running(answering(lambda n: b"{}")) as url:
        again = play(url, 1, out, resume=True)  # resuming: the episode is kept, not played again
    assert again.episodes == 1 and read_episodes(out)[0].steps == episode.steps


def test_a_trickling_answer_is_bounded_by_the_request_timeout_as_a_whole(tmp_path: Path) -> None:
    @server
    async def trickle(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        gone = asyncio.ensure_future(receive())
        while not gone.done():  # a byte at a time, each well within the per-read timeout, until the client leaves
            await send({"type": "http.response.body", "body": b" ", "more_body": True})
            await asyncio.wait([gone], timeout=0.1)

    def policy() -> ChatPolicy:
        return ChatPolicy("m", Wordle.tools, base_url=f"{url}/v1", max_retries=0, timeout_s=1.0)

    out = tmp_path / "run.jsonl"
    with running(trickle) as url:  # before, only the episode's deadline ended it
        rollout(Wordle, policy, plan_episodes(Wordle, 1, "test"), out=out, deadline_s=120)
    (episode,) = read_episodes(out)
    assert episode.failure is not None and episode.failure.kind == "model"
    assert "Timeout" in episode.failure.message


def test_an_answer_over_the_size_limit_is_a_model_failure_and_not_read(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    with running(terabyte_upstream) as url:
        play(url, 1, out)
    (episode,) = read_episodes(out)
    assert episode.failure is not None and episode.failure.kind == "model"
    assert "byte limit on answers" in episode.failure.message
