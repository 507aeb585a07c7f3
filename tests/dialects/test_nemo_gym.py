"""The NeMo Gym routes on a real server: signed-cookie sessions, tools, /verify, errors, export.

NeMo's own ServerClient is exercised in tests/peers/test_nemo_gym.py; here raw HTTP checks the
wire shapes and every error path.
"""

from __future__ import annotations

import asyncio
import base64
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from omnienv.app import create_app
from omnienv.cli.main import app as cli
from omnienv.core import AsyncEnvironment, Environment, ImageBlock, Task, TextBlock, tool
from omnienv.dialects.nemo_gym import nemo_gym_rows
from omnienv.dialects.nemo_gym_gymnasium import nemo_gym_app
from omnienv.envs.wordle import Wordle
from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.server import running
from tests.dialects.envs import Counter

COOKIE = "omnienv___wordle"
ROW = {"responses_create_params": {"input": [{"role": "user", "content": "play"}]}, "task_id": "test/0004"}
RESPONSE = {"id": "r", "object": "response", "output": []}


class Clash(Environment):
    """Tools named like omnienv's own routes."""

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "go"

    @tool
    def metadata(self) -> str:
        """A tool that only shares the name."""
        return "tool metadata"

    @tool
    def health(self) -> str:
        """Another one."""
        return "tool health"


@pytest.fixture(scope="module")
def wordle_app() -> Any:
    return create_app(Wordle)


@pytest.fixture(scope="module")
def wordle_url(wordle_app: Any) -> Iterator[str]:
    with running(wordle_app) as url:
        yield url


@pytest.fixture
def http(wordle_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=wordle_url, timeout=10) as client:
        yield client


def seed(http: httpx.Client, row: dict[str, Any] | None = None, cookie: str = COOKIE) -> str:
    reply = http.post("/seed_session", json=ROW if row is None else row)
    assert reply.status_code == 200 and reply.json() == {}, reply.text
    return http.cookies[cookie]


def test_seed_play_verify_close(http: httpx.Client) -> None:
    seed(http)
    history: list[tuple[str, str]] = []
    for _ in range(6):
        reply = http.post("/guess", json={"word": next_guess(history)})
        assert reply.headers["content-type"].startswith("text/plain")  # the body is what the model reads
        marks = read_marks(reply.text)
        assert marks is not None
        history.append(marks)
        if "Correct!" in reply.text:
            assert reply.headers["x-omnienv-done"] == "true"
            break
        assert reply.headers["x-omnienv-done"] == "false" and "x-omnienv-error" not in reply.headers
    reply = http.post("/verify", json={**ROW, "response": RESPONSE})
    assert reply.status_code == 200
    body = reply.json()
    assert body["reward"] == 1.0 + 0.5 * (1 - len(history) / 6)
    assert body["task_id"] == "test/0004" and body["response"] == RESPONSE  # the request is echoed
    assert body["mask_sample"] is False and body["failure_kind"] is None
    assert body["done"] is True and body["truncated"] is False
    over = http.post("/guess", json={"word": "crane"})
    assert over.status_code == 409 and over.json()["code"] == "EPISODE_OVER"
    assert http.post("/close_session", json={}).json() == {"closed": True}
    assert http.post("/close_session", json={}).json() == {"closed": False}  # idempotent


def test_the_agents_mistakes_are_observations(http: httpx.Client) -> None:
    seed(http)
    bad = http.post("/guess", json={"wurd": "crane"})
    assert bad.status_code == 200 and bad.headers["x-omnienv-error"] == "true" and "did you mean 'word'" in bad.text
    assert http.post("/guess", json={"word": "zzzzz"}).headers["x-omnienv-error"] == "true"
    history = http.post("/get_history").text  # a tool without arguments: no body at all
    assert history.endswith("Guesses used: 0/6")
    assert http.post("/nemo_gym/guess", json={"word": "crane"}).text.startswith("CRANE ")


def test_reseeding_replaces_the_session(http: httpx.Client, wordle_app: Any) -> None:
    before = wordle_app.state.manager.active
    first = seed(http)
    second = seed(http)
    assert first != second and wordle_app.state.manager.active == before + 1
    http.post("/close_session")
    assert wordle_app.state.manager.active == before


@pytest.mark.parametrize(
    ("cookie", "status", "code"),
    [
        (None, 401, "NO_SESSION_COOKIE"),
        ("garbage", 403, "BAD_SESSION_COOKIE"),
        ("eyJzZXNzaW9uX2lkIjoiZm9yZ2VkIn0.AAAAAAAAAAAAAAAAAAAAAAAAAAA", 403, "BAD_SESSION_COOKIE"),
    ],
)
def test_missing_and_forged_cookies_are_refused(wordle_url: str, cookie: str | None, status: int, code: str) -> None:
    cookies = {COOKIE: cookie} if cookie else {}
    with httpx.Client(base_url=wordle_url, cookies=cookies) as http:
        for path, body in (("/guess", {"word": "crane"}), ("/verify", {**ROW, "response": RESPONSE})):
            reply = http.post(path, json=body)
            assert reply.status_code == status and reply.json()["code"] == code
            assert "seed_session" in reply.json()["detail"]


def test_a_tampered_cookie_is_refused_and_the_real_session_lives_on(http: httpx.Client) -> None:
    real = seed(http)
    payload, signature = real.rsplit(".", 1)
    other = "eyJzZXNzaW9uX2lkIjoib3RoZXIifQ"  # {"session_id": "other"} with the real signature
    for forged in (f"{other}.{signature}", f"{payload}.{signature[::-1]}", f"{payload}x.{signature}"):
        with httpx.Client(base_url=http.base_url, cookies={COOKIE: forged}) as attacker:
            reply = attacker.post("/guess", json={"word": "crane"})
        assert reply.status_code == 403 and reply.json()["code"] == "BAD_SESSION_COOKIE"
    assert http.post("/guess", json={"word": "crane"}).status_code == 200


def test_each_server_has_its_own_secret_unless_one_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    with running(create_app(Wordle)) as one, running(create_app(Wordle)) as two:
        with httpx.Client(base_url=one) as first:
            cookie = seed(first)
        with httpx.Client(base_url=two, cookies={COOKIE: cookie}) as second:
            reply = second.post("/guess", json={"word": "crane"})
        assert reply.status_code == 403
    monkeypatch.setenv("OMNIENV_NEMO_GYM_SECRET", "shared secret")
    with running(create_app(Wordle)) as one, running(create_app(Wordle)) as two:
        with httpx.Client(base_url=one) as first:
            cookie = seed(first)
        with httpx.Client(base_url=two, cookies={COOKIE: cookie}) as second:
            reply = second.post("/guess", json={"word": "crane"})
        assert reply.status_code == 404 and reply.json()["code"] == "SESSION_NOT_FOUND"  # signed, not here


@pytest.mark.parametrize(
    ("path", "content", "status", "code"),
    [
        ("/seed_session", b"[1]", 422, "VALIDATION_ERROR"),
        ("/seed_session", b'{"task_id": "test/9999"}', 404, "TASK_ERROR"),
        ("/seed_session", b'{"seed": -1}', 422, "VALIDATION_ERROR"),
        ("/seed_session", b"{oops", 400, "INVALID_JSON"),
        ("/guess", b'"crane"', 422, "VALIDATION_ERROR"),
        ("/verify", b'{"responses_create_params": {}}', 422, "VALIDATION_ERROR"),
        ("/verify", b'{"response": {}, "responses_create_params": 3}', 422, "VALIDATION_ERROR"),
        ("/aggregate_metrics", b'{"verify_responses": 1}', 422, "VALIDATION_ERROR"),
        ("/aggregate_metrics", b'{"verify_responses": [{"reward": "high"}]}', 422, "VALIDATION_ERROR"),
        ("/aggregate_metrics", b'{"verify_responses": [{"reward": 1, "task_id": {"a": 1}}]}', 422, "VALIDATION_ERROR"),
        ("/aggregate_metrics", b'{"verify_responses": [{"reward": 1, "_ng_task_index": []}]}', 422, "VALIDATION_ERROR"),
    ],
)
def test_wrong_payloads_get_typed_errors(http: httpx.Client, path: str, content: bytes, status: int, code: str) -> None:
    if path != "/seed_session":
        seed(http)
    reply = http.post(path, content=content, headers={"content-type": "application/json"})
    assert reply.status_code == status, reply.text
    assert reply.json()["code"] == code and reply.json()["detail"]


def test_aggregate_metrics_and_reverify_mode(http: httpx.Client) -> None:
    replies = [
        {"reward": 1.0, "_ng_task_index": 0},
        {"reward": 0.0, "_ng_task_index": 0},
        {"reward": 0.5, "_ng_task_index": 1},
        {"reward": 0.0, "_ng_task_index": 1, "mask_sample": True},
    ]
    body = http.post("/aggregate_metrics", json={"verify_responses": replies}).json()
    assert body["agent_metrics"]["mean/reward"] == 0.5 and body["agent_metrics"]["num_masked"] == 1
    assert body["key_metrics"] == {"mean/reward": 0.5}
    assert [group["mean/reward"] for group in body["group_level_metrics"]] == [0.5, 0.5]
    huge = http.post("/aggregate_metrics", json={"verify_responses": [{"reward": 1e308}] * 2}).json()
    assert huge["key_metrics"] == {"mean/reward": 1e308}  # a sum that overflowed made it null
    assert http.get("/reverify_mode").json() == "unsupported"


def test_failures_mask_the_sample_and_idle_sessions_are_reaped() -> None:
    app = create_app(Counter, idle_timeout=2.0)
    with running(app) as url, httpx.Client(base_url=url) as http:
        seed(http, {"responses_create_params": {"input": []}}, cookie="omnienv___counter")
        assert http.post("/add", json={"n": -1}).status_code == 200  # the env crashes: flagged
        body = http.post("/verify", json={"responses_create_params": {}, "response": {}}).json()
        assert body["mask_sample"] is True and body["failure_kind"] == "omnienv:env_error"
        assert body["reward"] == 0.0 and "the counter broke" in body["failure_reason"]
        deadline = time.monotonic() + 20
        while app.state.manager.active and time.monotonic() < deadline:
            time.sleep(0.05)
        assert app.state.manager.active == 0
        reply = http.post("/add", json={"n": 1})
        assert reply.status_code == 404 and reply.json()["code"] == "SESSION_NOT_FOUND"


def test_tools_named_like_our_routes_are_served_under_the_prefix() -> None:
    with running(create_app(Clash)) as url, httpx.Client(base_url=url) as http:
        http.post("/seed_session", json={})
        assert http.post("/nemo_gym/metadata").text == "tool metadata"
        assert http.post("/nemo_gym/health").text == "tool health"
        assert http.get("/health").json() == {"status": "healthy"}  # ours, untouched
        assert http.get("/metadata").json()["name"] == "clash"


def test_exported_rows_carry_prompt_tools_and_task_never_the_answer(tmp_path: Path) -> None:
    rows = list(nemo_gym_rows(Wordle, "test", limit=3))
    answers = {task.answer for task in Wordle.tasks("test")[:3]}
    assert [row["task_id"] for row in rows] == ["test/0000", "test/0001", "test/0002"]
    params = rows[0]["responses_create_params"]
    assert "Wordle" in params["input"][0]["content"] and params["input"][0]["role"] == "user"
    assert params["tools"][0] == {
        "type": "function",
        "name": "guess",
        "description": "Guess the hidden word.",
        "parameters": Wordle.tools["guess"].parameters,
        "strict": False,
    }
    assert not any(answer in orjson.dumps(row).decode() for row in rows for answer in answers)

    out = tmp_path / "rows.jsonl"
    result = CliRunner().invoke(
        cli, ["export", "nemo-gym", "wordle", "--split", "train", "--out", str(out), "--limit", "2"]
    )
    assert result.exit_code == 0, result.output
    assert [orjson.loads(line)["task_id"] for line in out.read_bytes().splitlines()] == ["train/0000", "train/0001"]
    bad = CliRunner().invoke(cli, ["export", "nemo-gym", "wordle", "--split", "nope", "--out", str(out)])
    assert bad.exit_code == 2 and "no split 'nope'" in bad.output


RELEASE = threading.Event()


class Pictures(Environment):
    """Answers with an image; ``wait`` hangs until the test releases it."""

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "look"

    @tool
    def show(self) -> list[TextBlock | ImageBlock]:
        """A caption and a picture."""
        return [TextBlock("a square"), ImageBlock(b"\x89PNG-ish", "image/png")]

    @tool
    def wait(self) -> str:
        """Block until released."""
        RELEASE.wait(30)
        return "released"


def test_images_are_returned_and_a_hung_step_masks_the_sample() -> None:
    RELEASE.clear()
    try:
        with running(create_app(Pictures, step_timeout=1.0)) as url, httpx.Client(base_url=url) as http:
            http.post("/seed_session", json={})
            shown = http.post("/show")  # simple_agent passes text only: the image is counted, never base64
            assert shown.text == "a square" and shown.headers["x-omnienv-images"] == "1"
            hung = http.post("/wait")
            assert hung.status_code == 504 and hung.json()["code"] == "STEP_TIMEOUT"
            body = http.post("/verify", json={"responses_create_params": {}, "response": {}}).json()
            assert body["mask_sample"] is True and body["failure_kind"] == "omnienv:step_timeout"
            assert http.post("/show").json()["code"] == "EPISODE_OVER"
    finally:
        RELEASE.set()


def test_oversized_bodies_are_refused() -> None:
    with running(create_app(Counter, max_message_bytes=1024)) as url, httpx.Client(base_url=url) as http:
        seed(http, {}, cookie="omnienv___counter")
        reply = http.post("/add", json={"n": 1, "pad": "x" * 4000})
        assert reply.status_code == 413 and reply.json()["code"] == "MESSAGE_TOO_LARGE"
        assert http.post("/add", json={"n": 1}).text == "total 1"


class AsyncQuiz(AsyncEnvironment):
    """An async environment with tasks and a picture in its prompt."""

    splits = ("test",)

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return [Task(f"test/{i}", "test", answer=f"secret-{i}") for i in range(2)]

    async def setup(self, task: Task | None, rng: random.Random) -> list[TextBlock | ImageBlock]:
        return [TextBlock(f"question {task.id if task else '?'}"), ImageBlock(b"img")]

    @tool
    async def answer(self, text: str) -> str:
        """Answer the question.

        Args:
            text: The answer.
        """
        return "noted"


def test_rows_of_an_async_env_with_images_even_from_async_code() -> None:
    async def export() -> list[dict[str, Any]]:
        return list(nemo_gym_rows(AsyncQuiz, "test"))

    rows = asyncio.run(export())
    content = rows[1]["responses_create_params"]["input"][0]["content"]
    assert content == [
        {"type": "input_text", "text": "question test/1"},
        {"type": "input_image", "image_url": "data:image/png;base64,aW1n", "detail": "auto"},
    ]
    assert "secret" not in orjson.dumps(rows).decode()


def test_every_reply_on_a_session_re_sends_its_cookie(wordle_url: str) -> None:
    """NeMo's simple_agent keeps only the cookies of the last reply, errors included."""
    jar = dict(httpx.post(f"{wordle_url}/seed_session", json=ROW).cookies)
    assert set(jar) == {COOKIE}
    header = {"cookie": f"{COOKIE}={jar[COOKIE]}"}
    for path, body, status in (
        ("/guess", {"wurd": 1}, 200),
        ("/guess", "oops", 422),
        ("/guess", {"word": "crane"}, 200),
        ("/get_history", {}, 200),
        ("/verify", {}, 422),
        ("/verify", {**ROW, "response": RESPONSE}, 200),
    ):
        reply = httpx.post(f"{wordle_url}{path}", json=body, headers=header)
        assert reply.status_code == status, reply.text
        assert dict(reply.cookies) == jar, path  # the same signed cookie, every time
    closed = httpx.post(f"{wordle_url}/close_session", headers=header)
    assert closed.json() == {"closed": True} and "Max-Age=0" in closed.headers["set-cookie"]


def test_nemo_and_ors_sessions_share_the_servers_capacity() -> None:
    with running(create_app(Counter, max_sessions=1)) as url, httpx.Client(base_url=url) as http:
        seed(http, {}, cookie="omnienv___counter")
        sid = http.post("/create_session").text.split("data: ")[1].split()[0]
        full = http.post("/create", json={}, headers={"X-Session-ID": sid})
        assert full.status_code == 503 and full.json()["code"] == "CAPACITY_REACHED"
        assert http.post("/close_session").json() == {"closed": True}
        assert http.post("/create", json={}, headers={"X-Session-ID": sid}).json() == {"sid": sid}
        with httpx.Client(base_url=url) as other:
            refused = other.post("/seed_session", json={})
        assert refused.status_code == 503 and refused.json()["code"] == "CAPACITY_REACHED"


def test_gymnasium_steps_carry_images_as_input_parts_and_void_episodes_fail() -> None:
    """NeMo's gymnasium_agent protocol: /reset, /step with the model's response, /close."""
    app = nemo_gym_app(Pictures)
    with running(app) as url, httpx.Client(base_url=url) as http:
        reset = http.post("/reset", json={"responses_create_params": {"input": []}})
        assert reset.json() == {"observation": None, "info": {"supports_explicit_close": True}}
        call = {"type": "function_call", "call_id": "c1", "name": "show", "arguments": "{}"}
        step = http.post("/step", json={"responses_create_params": {}, "response": {"output": [call]}}).json()
        data = base64.b64encode(b"\x89PNG-ish").decode()
        assert step["info"]["tool_outputs"] == [
            {
                "call_id": "c1",
                "output": [
                    {"type": "input_text", "text": "a square"},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{data}", "detail": "auto"},
                ],
            }
        ]
        assert step["terminated"] is False and step["reward"] == 0.0
        words = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
        last = http.post("/step", json={"responses_create_params": {}, "response": {"output": [words]}}).json()
        assert last["terminated"] is False and last["truncated"] is True  # a reply in words ends the episode
        assert http.post("/close", json={}).json() == {"closed": True}
        after = http.post("/step", json={"response": {"output": []}})
        assert after.status_code == 401 and after.json()["code"] == "NO_SESSION_COOKIE"

    with running(nemo_gym_app(Counter)) as url, httpx.Client(base_url=url) as http:
        http.post("/reset", json={})
        crash = {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"n": -1}'}
        void = http.post("/step", json={"response": {"output": [crash]}})
        assert void.status_code == 503 and void.json()["code"] == "EPISODE_VOID"  # no reward, never 0
        assert "the counter broke" in void.json()["detail"]
