"""The ORS routes on a real server: discovery, SSE sessions, tool calls, refusals and reaping.

The SDK's own client is exercised in tests/peers/test_openreward.py; here raw HTTP checks the
wire shapes and every error path, with Wordle and with small test environments.
"""

from __future__ import annotations

import base64
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from omnienv.app import create_app
from omnienv.core import Environment, ImageBlock, Task, TextBlock, tool
from omnienv.envs.wordle import Wordle
from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.server import running
from tests.dialects.envs import AsyncCounter, Counter


def sse(response: httpx.Response) -> list[tuple[str, str]]:
    """(event, data) pairs of an SSE body; comment lines (pings) skipped."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events, event, data = [], None, []
    for line in response.text.replace("\r\n", "\n").split("\n"):
        if not line:
            if event is not None:
                events.append((event, "\n".join(data)))
            event, data = None, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            if field == "event":
                event = value.strip()
            elif field == "data":
                data.append(value.lstrip())
    return events


class Ors:
    """A tiny ORS client over httpx, enough to check the wire."""

    def __init__(self, http: httpx.Client, env: str) -> None:
        self.http, self.env = http, env

    def new_sid(self) -> str:
        events = sse(self.http.post("/create_session"))
        assert events[0][0] == "task_id" and events[-1][0] == "end"
        return events[0][1]

    def open(self, **body: Any) -> str:
        sid = self.new_sid()
        reply = self.http.post("/create", json=body, headers={"X-Session-ID": sid})
        assert reply.status_code == 200, reply.text
        assert reply.json() == {"sid": sid}
        return sid

    def call(self, sid: str, name: str, arguments: Any, **extra: Any) -> dict[str, Any]:
        reply = self.http.post(
            f"/{self.env}/call", json={"name": name, "input": arguments, **extra}, headers={"X-Session-ID": sid}
        )
        events = sse(reply)
        assert events[0][0] == "task_id"
        kind, data = events[-1]
        assert kind == "end", events
        return orjson.loads(data)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def wordle_url() -> Iterator[str]:
    with running(create_app(Wordle)) as url:
        yield url


@pytest.fixture
def ors(wordle_url: str) -> Iterator[Ors]:
    with httpx.Client(base_url=wordle_url, timeout=10) as http:
        yield Ors(http, "wordle")


def test_discovery_lists_env_tools_splits_and_tasks_without_answers(ors: Ors) -> None:
    http = ors.http
    assert http.get("/list_environments").json() == ["wordle"]
    assert set(http.get("/version").json()) == {"version", "build_sha"}
    tools = http.get("/wordle/tools").json()
    assert [tool["name"] for tool in tools["tools"]] == ["guess", "get_history"]
    assert tools["tools"][0]["input_schema"]["properties"]["word"]["type"] == "string"
    assert tools["terminal_tool"] is None and tools["supports_score_group"] is False
    assert http.get("/wordle/splits").json() == [{"name": "train", "type": "train"}, {"name": "test", "type": "test"}]
    listed = http.post("/wordle/tasks", json={"split": "test"}).json()
    assert listed["env_name"] == "wordle" and len(listed["tasks"]) == len(Wordle.tasks("test"))
    assert all(set(task) == {"id", "split", "data"} and not task["data"] for task in listed["tasks"])
    assert "answer" not in str(listed)
    assert http.post("/wordle/num_tasks", json={"split": "test"}).json() == {"num_tasks": len(listed["tasks"])}
    assert http.post("/wordle/task", json={"split": "test", "index": 3}).json()["task"]["id"] == "test/0003"
    ranged = http.post("/wordle/task_range", json={"split": "test", "start": 1, "stop": 3}).json()
    assert [task["id"] for task in ranged["tasks"]] == ["test/0001", "test/0002"]
    assert http.post("/tasks", json={"split": "train"}).json()["tasks"][0]["id"] == "train/0000"  # bare path


def test_episode_to_a_win_then_refused_then_deleted(ors: Ors) -> None:
    task = ors.http.post("/wordle/tasks", json={"split": "test"}).json()["tasks"][5]
    sid = ors.open(env_name="wordle", task_spec=task)
    headers = {"X-Session-ID": sid}
    prompt = ors.http.get("/wordle/prompt", headers=headers).json()
    assert prompt[0]["type"] == "text" and "Wordle" in prompt[0]["text"]
    assert ors.http.get("/wordle/messages", headers=headers).json()[0]["role"] == "user"
    history: list[tuple[str, str]] = []
    for _ in range(6):
        reply = ors.call(sid, "guess", {"word": next_guess(history)})
        assert reply["ok"], reply
        output = reply["output"]
        marks = read_marks(output["blocks"][0]["text"])
        assert marks is not None
        history.append(marks)
        if output["finished"]:
            break
        assert output["reward"] == 0.0
    assert output["finished"] and output["reward"] > 1.0
    assert output["metadata"]["done"] is True and output["metadata"]["info"]["success"] is True
    refused = ors.call(sid, "guess", {"word": "crane"})
    assert refused == {"ok": False, "error": refused["error"], "reason": "episode_finished"}
    assert ors.http.post("/ping", headers=headers).json() == {"status": "ok"}
    assert ors.http.post("/delete", headers=headers).json() == {"sid": sid}
    gone = ors.http.get("/wordle/prompt", headers=headers)
    assert gone.status_code == 410 and "deleted" in gone.json()["detail"]


def test_session_by_split_and_index_and_bad_calls_are_refused_with_reasons(ors: Ors) -> None:
    sid = ors.open(split="test", index=2)
    unknown = ors.call(sid, "nope", {})
    assert unknown["ok"] is False and unknown["reason"] == "not_found" and "nope" in unknown["error"]
    bad = ors.call(sid, "guess", {"wurd": "crane"})
    assert bad["reason"] == "input_validation" and "did you mean 'word'" in bad["error"]
    assert ors.call(sid, "guess", ["crane"])["reason"] == "bad_input_shape"
    not_a_word = ors.call(sid, "guess", {"word": "zzzzz"})  # the agent's mistake: an observation, no attempt used
    assert not_a_word["ok"] and not_a_word["output"]["metadata"]["is_error"] is True
    history = ors.call(sid, "get_history", {})
    assert history["output"]["blocks"][0]["text"].endswith("Guesses used: 0/6")


def test_a_resent_call_with_its_task_id_is_replayed_not_run_twice(ors: Ors) -> None:
    sid = ors.open(split="test", index=0)
    first = ors.call(sid, "guess", {"word": "crane"}, task_id="call-1")
    again = ors.call(sid, "guess", {"word": "crane"}, task_id="call-1")
    assert first == again
    history = ors.call(sid, "get_history", {})["output"]["blocks"][0]["text"]
    assert history.endswith("Guesses used: 1/6")


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "code"),
    [
        ("/create", {"split": "test", "index": 0}, {}, 422, "VALIDATION_ERROR"),
        ("/create", {"split": "nope", "index": 0}, {"X-Session-ID": "a"}, 404, "TASK_ERROR"),
        ("/create", {"split": "test", "index": 10**6}, {"X-Session-ID": "b"}, 404, "TASK_ERROR"),
        ("/create", {"task_spec": {"id": "test/9999", "split": "test"}}, {"X-Session-ID": "c"}, 404, "TASK_ERROR"),
        ("/create", {"task_spec": {"answer": "crane"}}, {"X-Session-ID": "d"}, 422, "VALIDATION_ERROR"),
        ("/create", {"env_name": "chess", "split": "test", "index": 0}, {"X-Session-ID": "e"}, 404, "TASK_ERROR"),
        ("/create", {}, {"X-Session-ID": "f"}, 422, "VALIDATION_ERROR"),
        ("/wordle/call", {"name": "guess", "input": {}}, {"X-Session-ID": "unknown"}, 404, "SESSION_NOT_FOUND"),
        ("/ping", {}, {"X-Session-ID": "unknown"}, 404, "SESSION_NOT_FOUND"),
        ("/wordle/tasks", {"split": 3}, {}, 404, "TASK_ERROR"),
        ("/wordle/task", {"split": "test", "index": "1"}, {}, 422, "VALIDATION_ERROR"),
    ],
)
def test_bad_requests_get_typed_errors(
    ors: Ors, path: str, body: dict[str, Any], headers: dict[str, str], status: int, code: str
) -> None:
    reply = ors.http.post(path, json=body, headers=headers)
    assert reply.status_code == status, reply.text
    assert reply.json()["code"] == code and reply.json()["detail"]


def test_malformed_bodies_do_not_hurt_other_sessions(ors: Ors) -> None:
    sid = ors.open(split="test", index=1)
    headers = {"X-Session-ID": sid}
    for raw in (b"{not json", b"[1, 2]", b"\xff\xfe"):
        reply = ors.http.post("/wordle/call", content=raw, headers={**headers, "content-type": "application/json"})
        assert reply.status_code in (400, 422) and reply.json()["code"]
    assert ors.http.post("/create", json={"split": "test", "index": 0}, headers=headers).json()["code"] == (
        "VALIDATION_ERROR"  # the id is taken
    )
    assert ors.call(sid, "guess", {"word": "crane"})["ok"]


def test_any_environment_works_and_idle_sessions_are_reaped() -> None:
    for env_class in (Counter, AsyncCounter):
        app = create_app(env_class, idle_timeout=2.0)
        with running(app) as url, httpx.Client(base_url=url, timeout=10) as http:
            ors = Ors(http, env_class.name)
            assert http.get(f"/{env_class.name}/splits").json() == []
            sid = ors.open()
            reply = ors.call(sid, "add", {"n": 3})
            assert reply["ok"] and reply["output"]["finished"] and reply["output"]["reward"] >= 1.0
            assert app.state.manager.active == 1
            deadline = time.monotonic() + 20
            while app.state.manager.active and time.monotonic() < deadline:
                time.sleep(0.05)
            assert app.state.manager.active == 0
            assert http.get(f"/{env_class.name}/prompt", headers={"X-Session-ID": sid}).status_code == 410


def test_a_crashing_tool_ends_only_its_own_episode_flagged_as_failed() -> None:
    with running(create_app(Counter)) as url, httpx.Client(base_url=url, timeout=10) as http:
        ors = Ors(http, "counter")
        sid, other = ors.open(), ors.open()
        reply = ors.call(sid, "add", {"n": -1})  # the env's failure: finished, flagged
        assert reply["ok"] and reply["output"]["finished"] and reply["output"]["metadata"]["failure"]
        assert reply["output"]["reward"] is None  # ORS's "no reward": a void episode is never scored 0
        assert ors.call(other, "add", {"n": 1})["output"]["blocks"][0]["text"] == "total 1"


def test_capacity_is_a_clear_error() -> None:
    with running(create_app(Counter, max_sessions=1)) as url, httpx.Client(base_url=url, timeout=10) as http:
        ors = Ors(http, "counter")
        ors.open()
        sid = ors.new_sid()
        reply = http.post("/create", json={}, headers={"X-Session-ID": sid})
        assert reply.status_code == 503 and reply.json()["code"] == "CAPACITY_REACHED"


RELEASE = threading.Event()


class Stuck(Environment):
    """A blocking environment whose ``wait`` tool hangs until the test releases it."""

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "ready"

    @tool
    def wait(self) -> str:
        """Block until released."""
        RELEASE.wait(30)
        return "released"

    @tool
    def show(self) -> list[TextBlock | ImageBlock]:
        """A caption and a picture."""
        return [TextBlock("a square"), ImageBlock(b"\x89PNG-ish", "image/jpeg")]


def test_images_and_a_step_past_its_deadline_is_an_sse_error_event_ending_the_episode() -> None:
    RELEASE.clear()
    try:
        with running(create_app(Stuck, step_timeout=1.0)) as url, httpx.Client(base_url=url, timeout=10) as http:
            ors = Ors(http, "stuck")
            sid = ors.open()
            blocks = ors.call(sid, "show", {})["output"]["blocks"]
            assert blocks == [
                {"type": "text", "text": "a square", "detail": None},
                {
                    "type": "image",
                    "data": base64.b64encode(b"\x89PNG-ish").decode(),
                    "mimeType": "image/jpeg",
                    "detail": None,
                },
            ]
            events = sse(http.post("/stuck/call", json={"name": "wait", "input": {}}, headers={"X-Session-ID": sid}))
            assert [kind for kind, _ in events] == ["task_id", "error"]
            assert "deadline" in events[1][1]
            assert ors.call(sid, "wait", {})["reason"] == "episode_finished"
    finally:
        RELEASE.set()


def test_oversized_bodies_are_refused() -> None:
    with running(create_app(Counter, max_message_bytes=1024)) as url, httpx.Client(base_url=url) as http:
        sid = Ors(http, "counter").open()
        reply = http.post(
            "/counter/call", json={"name": "add", "input": {"n": 1, "pad": "x" * 4000}}, headers={"X-Session-ID": sid}
        )
        assert reply.status_code == 413 and reply.json()["code"] == "MESSAGE_TOO_LARGE"


def test_platform_questions_and_a_prompt_before_create(ors: Ors) -> None:
    http = ors.http
    assert http.get("/v1/environments/me/wordle/required-secrets").json() == {"secrets": []}
    assert http.get("/v1/environments//wordle/required-secrets").json() == {"secrets": []}  # no namespace
    assert http.get("/v1/environments/me/wordle/task-difficulty", params={"split": "test"}).json() == {"tasks": []}
    other = http.get("/v1/environments/me/chess/required-secrets")
    assert other.status_code == 404 and "not 'chess'" in other.json()["detail"]
    minted = ors.new_sid()  # what the SDK's Environment.get_prompt(task) sends: an id, no task
    early = http.get("/wordle/prompt", headers={"X-Session-ID": minted})
    assert early.status_code == 404 and "has no task yet: POST /create" in early.json()["detail"]
