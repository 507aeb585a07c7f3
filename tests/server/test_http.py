"""HTTP: OpenEnv's discovery and stateless routes, our stateful sessions, tasks without answers."""

from __future__ import annotations

import httpx
import jsonschema
import pytest

from omnienv.envs.wordle import Wordle
from tests.polling import eventually
from tests.server.conftest import Hang

GUESS = {"type": "call_tool", "tool_name": "guess", "arguments": {"word": "crane"}}


@pytest.fixture
def http(serve):
    url, manager = serve("wordle", max_sessions=3, max_message_bytes=4096)
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
        client.manager = manager
        yield client


def test_discovery_routes_match_openenv(http) -> None:
    assert http.get("/health").json() == {"status": "healthy"}
    assert http.get("/metadata").json() == {
        "name": "wordle",
        "description": Wordle.description,
        "readme_content": None,
        "version": "1.0.0",
        "author": None,
        "documentation_url": None,
    }
    schema = http.get("/schema").json()
    assert set(schema) == {"action", "observation", "state"}
    jsonschema.validate(GUESS, schema["action"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": "call_tool", "tool_name": "guess", "arguments": {"wrd": 1}}, schema["action"])
    spec = http.get("/openapi.json").json()
    assert spec["info"]["version"] == "1.0.0"
    assert {"/health", "/sessions", "/sessions/{session_id}/step", "/reset"} <= set(spec["paths"])


def test_openenvs_stateless_routes_keep_their_shapes(http) -> None:
    reset = http.post("/reset", json={"seed": 3}).json()
    assert list(reset) == ["observation", "reward", "done", "metadata"] and reset["metadata"] is None
    step = http.post("/step", json={"action": GUESS}).json()
    assert step["observation"]["tool_name"] == "guess" and step["metadata"] is None
    assert http.get("/state").json()["step_count"] == 0
    bad = http.post("/step", json={"action": "crane"})
    assert bad.status_code == 422 and bad.json()["data"]["code"] == "VALIDATION_ERROR"
    assert http.manager.active == 0  # stateless calls take no session slot


def test_a_stateful_http_session_plays_and_ends(http) -> None:
    created = http.post("/sessions")
    assert created.status_code == 201
    session = created.json()["session_id"]
    reset = http.post(f"/sessions/{session}/reset", json={"task_id": "test/0002"}).json()
    assert reset["type"] == "observation" and reset["data"]["observation"]["content"]
    answer = Wordle.task_index().find("test/0002", "test").answer
    assert http.post(f"/sessions/{session}/step", json=GUESS).json()["data"]["done"] is False
    won = http.post(f"/sessions/{session}/step", json={"action": {**GUESS, "arguments": {"word": answer}}}).json()
    assert won["data"]["done"] is True and won["data"]["reward"] > 1
    state = http.get(f"/sessions/{session}/state").json()["data"]
    assert state["step_count"] == 2 and state["done"] is True
    over = http.post(f"/sessions/{session}/step", json=GUESS)
    assert over.status_code == 409 and over.json()["data"]["code"] == "EPISODE_OVER"
    assert http.delete(f"/sessions/{session}").json() == {"session_id": session, "closed": True, "closing": False}
    missing = http.post(f"/sessions/{session}/step", json=GUESS)
    assert missing.status_code == 404 and missing.json()["data"]["code"] == "SESSION_NOT_FOUND"
    assert http.manager.active == 0


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "INVALID_JSON"),
        (b'{"type": "bogus"}', 422, "VALIDATION_ERROR"),
        (b'{"type": "call_tool", "tool_name": "guess", "arguments": [1]}', 422, "VALIDATION_ERROR"),
        (b'{"pad": "' + b"x" * 5000 + b'"}', 413, "MESSAGE_TOO_LARGE"),
    ],
)
def test_bad_bodies_get_typed_errors_and_the_session_lives(http, body, status, code) -> None:
    session = http.post("/sessions").json()["session_id"]
    http.post(f"/sessions/{session}/reset")
    reply = http.post(f"/sessions/{session}/step", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == status and reply.json()["data"]["code"] == code
    assert http.post(f"/sessions/{session}/step", json=GUESS).json()["type"] == "observation"


def test_http_capacity_is_a_503_with_the_same_code(http) -> None:
    for _ in range(3):
        http.post("/sessions")
    full = http.post("/sessions")
    assert full.status_code == 503
    assert full.json()["data"]["code"] == "CAPACITY_REACHED" and full.json()["data"]["max_sessions"] == 3


def test_task_routes_list_splits_and_tasks_but_never_answers(http) -> None:
    assert http.get("/splits").json() == {"env": "wordle", "splits": ["train", "test"]}
    page = http.get("/splits/test/tasks", params={"offset": 2, "limit": 5}).json()
    assert page["total"] == len(Wordle.tasks("test")) and page["offset"] == 2
    assert [task["id"] for task in page["tasks"]] == [f"test/{i:04d}" for i in range(2, 7)]
    for offset, shown in [(-5, 0), (10**30, page["total"])]:  # clamped, and echoed as used
        beyond = http.get("/splits/test/tasks", params={"offset": offset, "limit": 10**30})
        assert beyond.status_code == 200 and beyond.json()["offset"] == shown, beyond.text
    everything = http.get("/splits/test/tasks", params={"limit": 10_000})
    assert all("answer" not in task for task in everything.json()["tasks"])
    values = {str(value) for task in everything.json()["tasks"] for value in (task["id"], *task["data"].values())}
    assert not values & {task.answer for task in Wordle.tasks("test")}
    unknown = http.get("/splits/dev/tasks")
    assert unknown.status_code == 404 and unknown.json()["data"]["code"] == "TASK_ERROR"


def test_two_requests_racing_on_one_session_are_refused_not_interleaved(serve) -> None:
    from tests.server.conftest import RELEASE

    url, manager = serve(Hang, step_timeout=5)
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
        session = client.post("/sessions").json()["session_id"]
        client.post(f"/sessions/{session}/reset")
        import threading

        slow = threading.Thread(
            target=client.post,
            args=(f"/sessions/{session}/step",),
            kwargs={"json": {"type": "call_tool", "tool_name": "hang"}},
        )
        slow.start()
        try:
            eventually(lambda: manager.sessions[session].machine.busy, what="first step running")
            busy = client.post(f"/sessions/{session}/step", json={"type": "call_tool", "tool_name": "ping"})
            assert busy.status_code == 409 and busy.json()["data"]["code"] == "SESSION_ERROR"
        finally:
            RELEASE.set()
            slow.join(10)


def test_a_split_whose_name_holds_a_slash_is_listed(serve, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from omnienv.envs.terminal import harbor_environment
    from tests.envs.test_terminal import make_task

    make_task(tmp_path, split="v1/test")
    url, _ = serve(harbor_environment(tmp_path))
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
        assert client.get("/splits").json()["splits"] == ["v1/test"]
        for path in ("/splits/v1/test/tasks", "/splits/v1%2Ftest/tasks"):  # as the play page encodes it
            page = client.get(path)
            assert page.status_code == 200 and [t["id"] for t in page.json()["tasks"]] == ["v1/test/answer"], page.text
