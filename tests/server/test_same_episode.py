"""One rule of task choice and one of episode scoring, wherever an episode runs.

The same environment, split and seed start the same task with the same first observation, the
randomness ``setup`` draws included, in-process and over ``/ws``, HTTP sessions, MCP, ORS and
NeMo Gym; and an episode ended early gets the rubric's score wherever it is ended: a trainer's
``end()`` in-process, on ``/ws`` and HTTP sessions, the operator's ``/end`` on an agent-only server,
and NeMo Gym's ``/verify`` for a rollout its agent stopped.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from websockets.sync.client import connect as ws_connect

from omnienv.app import create_app
from omnienv.client import HTTPClient, WebSocketClient
from omnienv.core import Environment, Rubric, StepResult, Task, ToolCall, tool
from omnienv.dialects.nemo_gym import nemo_gym_rows
from omnienv.envs.wordle import Wordle
from omnienv.protocol.messages import state_from_reply, step_result_from_reply
from omnienv.server import running

SEED, SPLIT = 5, "test"


class Drawn(Environment):
    """Every reset draws a number from its generator: the episode depends on the seed too."""

    name = "drawn"
    splits = ("train", "test")
    blocking = False

    def guessed(env: Drawn) -> float:  # type: ignore[misc]
        return env.guesses / 10

    rubric = Rubric(guessed)

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return [Task(f"{split}/{i:02d}", split, {"n": i}) for i in range(12)]

    def setup(self, task: Task | None, rng: random.Random) -> str:
        assert task is not None
        self.drawn = rng.randrange(10**9)
        self.guesses = 0
        return f"task {task.id}, number {self.drawn}"

    @tool
    def show(self) -> str:
        """What this episode drew at reset."""
        return f"task {self.task.id if self.task else None}, number {self.drawn}"

    @tool
    def guess(self, number: int) -> str:
        """Guess a number (each guess adds 0.1 to the final score)."""
        self.guesses += 1
        return "noted"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running(create_app(Drawn)) as served:
        yield served


def in_process() -> tuple[Task, str]:
    env = Drawn()
    first = env.reset(seed=SEED, split=SPLIT).text
    assert env.task is not None
    return env.task, first


def test_the_draw_is_the_seeds_and_the_split_named() -> None:
    task, first = in_process()
    assert task.split == SPLIT and first.startswith(f"task {task.id},")
    assert in_process() == (task, first)
    others = {Drawn().reset(seed=seed, split=SPLIT).text for seed in range(8)}
    assert len(others) > 1  # the check can fail: other seeds give other episodes
    named = Drawn()
    assert named.reset(task.id, SEED).text == first  # naming the drawn task starts the same episode


def test_ws_and_http_sessions_start_the_same_episode(url: str) -> None:
    task, first = in_process()
    with ws_connect(url.replace("http", "ws") + "/ws") as ws:
        ws.send(orjson.dumps({"type": "reset", "data": {"seed": SEED, "split": SPLIT}}).decode())
        frame = orjson.loads(ws.recv(timeout=10))
        assert frame["data"]["observation"]["content"][0]["text"] == first
    with httpx.Client(base_url=url, timeout=10) as http:
        sid = http.post("/sessions").json()["session_id"]
        reply = http.post(f"/sessions/{sid}/reset", json={"seed": SEED, "split": SPLIT}).json()
        assert reply["data"]["observation"]["content"][0]["text"] == first
        state = http.get(f"/sessions/{sid}/state").json()["data"]
        assert state["task_id"] == task.id
        http.delete(f"/sessions/{sid}")
    with WebSocketClient(url) as client:
        assert client.reset(task.id, SEED).text == first


def test_mcp_starts_the_same_episode(url: str) -> None:
    _, first = in_process()

    async def main() -> str:
        target = f"{url}/mcp?split={SPLIT}&seed={SEED}"
        async with streamable_http_client(target) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            shown = await session.call_tool("show", {})
            return str(shown.content[0].text)

    assert asyncio.run(asyncio.wait_for(main(), 30)) == first


def test_ors_starts_the_same_episode(url: str) -> None:
    task, first = in_process()
    index = [t.id for t in Drawn.task_index().split(SPLIT)].index(task.id)
    with httpx.Client(base_url=url, timeout=10) as http:
        minted = http.post("/create_session").text
        sid = next(line[6:] for line in minted.splitlines() if line.startswith("data: "))
        reply = http.post("/create", json={"split": SPLIT, "index": index, "seed": SEED}, headers={"X-Session-ID": sid})
        assert reply.status_code == 200, reply.text
        prompt = http.get("/drawn/prompt", headers={"X-Session-ID": sid}).json()
        assert [block["text"] for block in prompt] == [first]
        http.post("/delete", headers={"X-Session-ID": sid})


def test_nemo_gym_rows_and_sessions_start_the_same_episode(url: str) -> None:
    task, first = in_process()
    rows = list(nemo_gym_rows(Drawn, SPLIT, seed=SEED))
    row = next(r for r in rows if r["seed"] == SEED)
    drawn = Drawn()
    row_first = drawn.reset(row["task_id"], SEED).text
    assert row["responses_create_params"]["input"][0]["content"] == row_first
    with httpx.Client(base_url=url, timeout=10) as http:
        assert http.post("/seed_session", json={"task_id": task.id, "seed": SEED}).status_code == 200
        assert http.post("/show", json={}).text == first
        http.post("/close_session", json={})


def test_an_episode_ended_early_gets_the_rubric_in_process_and_served(url: str) -> None:
    env = Drawn()
    env.reset(seed=SEED, split=SPLIT)
    env.step(ToolCall("guess", {"number": 1}))
    env.step(ToolCall("guess", {"number": 2}))
    local = env.end()
    assert local.truncated and local.reward == pytest.approx(0.2) and env.episode_reward == pytest.approx(0.2)
    assert env.end().reward == 0.0  # ending twice scores once
    for client in (WebSocketClient(url), HTTPClient(url)):
        with client:
            client.reset(seed=SEED)
            client.step(ToolCall("guess", {"number": 1}))
            client.step(ToolCall("guess", {"number": 2}))
            served = client.end()
            assert served.truncated and served.reward == pytest.approx(local.reward)
            assert client.end().reward == 0.0


# -- a partial Wordle game, ended early everywhere ---------------------------------------------

WORDLE_TASK = "test/0004"  # the answer is CUING
PARTIAL = ("doing", "crane")  # three greens, then two: not won, four guesses left
TOKEN = "operator-secret"
OPERATOR = {"authorization": f"Bearer {TOKEN}"}


def wordle_ended_in_process() -> tuple[list[str], StepResult, float]:
    """The partial game's observation texts, what ``end()`` returned, and the episode's total."""
    env = Wordle()
    env.reset(WORDLE_TASK, SEED)
    texts = []
    for word in PARTIAL:
        result = env.step(ToolCall("guess", {"word": word}))
        assert not result.over and not result.observation.is_error, result
        texts.append(result.observation.text)
    return texts, env.end(), env.episode_reward


def test_a_partial_wordle_game_ended_in_process_gets_the_rubrics_partial_credit() -> None:
    texts, ended, total = wordle_ended_in_process()
    assert [text.split()[0] for text in texts] == ["DOING", "CRANE"]
    assert ended.truncated and not ended.done and ended.observation.content == ()
    assert ended.reward == pytest.approx(0.3) and total == ended.reward  # the best guess's three greens
    assert ended.info == {"ended_by": "trainer", "rubric": {"solved": 0.0, "partial_credit": ended.reward}}


def test_the_operators_end_scores_an_agent_only_episode_as_end_does_in_process(serve) -> None:
    local_texts, local, _ = wordle_ended_in_process()
    served = serve("wordle", agent_only=True, operator_token=TOKEN)
    with httpx.Client(base_url=served.url, trust_env=False, timeout=10) as http:
        started = http.post("/operator/sessions", json={"task_id": WORDLE_TASK, "seed": SEED}, headers=OPERATOR)
        assert started.status_code == 201, started.text
        session_id, path = started.json()["session_id"], started.json()["mcp_path"]

        async def play() -> tuple[list[str], httpx.Response, Any]:
            async with (
                streamable_http_client(served.url + path) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                texts = []
                for word in PARTIAL:
                    result = await session.call_tool("guess", {"word": word})
                    assert result.is_error is False, result
                    texts.append(result.content[0].text)
                # the operator cuts the agent short while it is still connected
                async with httpx.AsyncClient(base_url=served.url, trust_env=False, timeout=10) as operator:
                    ended = await operator.post(f"/operator/sessions/{session_id}/end", headers=OPERATOR)
                after = await session.call_tool("guess", {"word": "cuing"})
                return texts, ended, after

        texts, ended, after = asyncio.run(asyncio.wait_for(play(), 60))
        assert texts == local_texts  # the same game
        assert ended.status_code == 200, ended.text
        data = ended.json()["data"]
        assert data["reward"] == local.reward  # exactly the in-process score
        assert data["done"] is True and data["truncated"] is True  # on the wire done means over; truncated says how
        cut = step_result_from_reply(data)
        fields = ("done", "truncated", "reward", "info")
        assert [getattr(cut, f) for f in fields] == [getattr(local, f) for f in fields]
        assert after.is_error is True and after.content[0].text.startswith("EPISODE_OVER"), after
        state = state_from_reply(http.get(f"/operator/sessions/{session_id}/state", headers=OPERATOR).json()["data"])
        assert (state.done, state.truncated, state.reward, state.step_count) == (False, True, local.reward, 2)
        again = http.post(f"/operator/sessions/{session_id}/end", headers=OPERATOR).json()["data"]
        assert again["reward"] == 0.0 and again["truncated"] is True  # ending twice scores once


def test_nemo_gym_verify_scores_a_stopped_rollout_as_end_does_in_process(serve) -> None:
    local_texts, local, total = wordle_ended_in_process()
    url, _ = serve("wordle")
    row = {"responses_create_params": {"input": [{"role": "user", "content": "play"}]}, "task_id": WORDLE_TASK}
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        seeded = http.post("/seed_session", json={**row, "seed": SEED})
        assert seeded.status_code == 200, seeded.text
        texts = []
        for word in PARTIAL:
            reply = http.post("/guess", json={"word": word})
            assert reply.status_code == 200 and reply.headers["x-omnienv-done"] == "false", reply.text
            texts.append(reply.text)
        assert texts == local_texts  # the same game, stopped by the agent loop before it ended
        verified = http.post("/verify", json={**row, "response": {"id": "r", "object": "response", "output": []}})
        assert verified.status_code == 200, verified.text
        body = verified.json()
        assert body["reward"] == local.reward == total  # exactly the in-process score
        assert body["done"] is local.done is False and body["truncated"] is local.truncated is True
        assert body["mask_sample"] is False and body["failure_kind"] is None
        over = http.post("/guess", json={"word": "cuing"})  # the end is the environment's: no more calls
        assert over.status_code == 409 and over.json()["code"] == "EPISODE_OVER", over.text
        assert http.post("/close_session", json={}).json() == {"closed": True}
