"""The front server on a local Ray instance: every transport routes to sessions on host actors."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
import ray

from omnienv.client import AsyncWebSocketClient, check_url
from omnienv.core import EpisodeOverError, StepResult, ToolCall, WorkerLostError
from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.ray import HostPool, RemoteEnv
from omnienv.ray.serving import create_ray_app
from omnienv.server import OmniApp, running
from tests.polling import eventually
from tests.ray.conftest import kill

pytestmark = pytest.mark.usefixtures("ray_local")


@pytest.fixture
def served(wordle_hosts: HostPool) -> Iterator[tuple[OmniApp, str]]:
    app = create_ray_app("wordle", wordle_hosts, idle_timeout=None)
    with running(app, timeout=30) as url:
        yield app, url


def actor_of(app: OmniApp, session_id: str) -> int:
    env = app.state.manager.sessions[session_id].env
    assert isinstance(env, RemoteEnv) and env.host is not None
    return env.host.index


async def play_ws(url: str, seed: int) -> StepResult:
    env = await AsyncWebSocketClient.connect(url)
    try:
        await env.reset(seed=seed)
        history: list[tuple[str, str]] = []
        for _ in range(6):
            word = await asyncio.to_thread(next_guess, history)  # CPU-heavy: keep the loop answering pings
            result = await env.step(ToolCall("guess", {"word": word}))
            marks = read_marks(result.observation.text)
            assert marks is not None, result.observation.text
            history.append(marks)
            if result.done:
                return result
        raise AssertionError("the game did not end within six guesses")
    finally:
        await env.close()


def test_200_ws_sessions_play_wordle_to_the_end_on_4_actors(
    served: tuple[OmniApp, str], wordle_hosts: HostPool
) -> None:
    app, url = served
    peak: list[int] = []

    async def all_games() -> list[StepResult]:
        async def watch() -> None:
            while True:
                peak.append(max(host.sessions for host in wordle_hosts.hosts))
                await asyncio.sleep(0.05)

        watcher = asyncio.create_task(watch())
        try:
            return await asyncio.gather(*(play_ws(url, seed) for seed in range(200)))
        finally:
            watcher.cancel()

    results = asyncio.run(all_games())
    assert len(results) == 200
    assert all("Correct!" in r.observation.text and r.reward > 0 for r in results)
    assert max(peak) <= 50  # least loaded first: never more than a fair share on one actor
    eventually(lambda: app.state.manager.active == 0 and wordle_hosts.sessions == 0, 20)
    infos = ray.get([host.actor.info.remote() for host in wordle_hosts.hosts])
    assert [info["sessions"] for info in infos] == [0, 0, 0, 0]


def test_the_contract_checks_pass_over_the_wire(served: tuple[OmniApp, str], wordle_hosts: HostPool) -> None:
    _, url = served
    report = check_url(url)
    assert report.ok, [f"{r.name}: {r.message}" for r in report.failures]


def test_http_and_mcp_sessions_route_to_actors(served: tuple[OmniApp, str], wordle_hosts: HostPool) -> None:
    app, url = served
    with httpx.Client(base_url=url, timeout=30) as http:
        ids = [http.post("/sessions").json()["session_id"] for _ in range(4)]
        assert sorted(actor_of(app, sid) for sid in ids) == [0, 1, 2, 3]  # least loaded first
        reset = http.post(f"/sessions/{ids[0]}/reset", json={"seed": 3}).json()
        assert "Wordle" in reset["data"]["observation"]["content"][0]["text"]
        step = http.post(
            f"/sessions/{ids[0]}/step", json={"type": "call_tool", "tool_name": "guess", "arguments": {"word": "crane"}}
        ).json()
        assert read_marks(step["data"]["observation"]["result"]["content"][0]["text"]) is not None
        state = http.get(f"/sessions/{ids[0]}/state").json()["data"]
        assert state["step_count"] == 1 and state["guesses"] == ["crane"]
        rpc = http.post(
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"session_id": ids[0], "name": "guess", "arguments": {"word": "slate"}},
            },
        ).json()
        assert "result" in rpc, rpc
        for sid in ids:
            assert http.delete(f"/sessions/{sid}").status_code == 200
    assert wordle_hosts.sessions == 0


def test_killed_actor_fails_its_sessions_with_a_flag_and_new_ones_go_to_live_actors(
    served: tuple[OmniApp, str], wordle_hosts: HostPool
) -> None:
    app, url = served
    guess = {"type": "call_tool", "tool_name": "guess", "arguments": {"word": "crane"}}
    with httpx.Client(base_url=url, timeout=30) as http:
        ids = [http.post("/sessions").json()["session_id"] for _ in range(8)]
        for sid in ids:
            assert http.post(f"/sessions/{sid}/reset", json={"seed": 1}).status_code == 200
        victim = wordle_hosts.hosts[2]
        doomed = [sid for sid in ids if actor_of(app, sid) == 2]
        assert len(doomed) == 2
        kill(victim)

        replies = {sid: http.post(f"/sessions/{sid}/step", json=guess) for sid in ids}
        failed = {sid for sid, r in replies.items() if r.json()["type"] == "error"}
        assert failed == set(doomed)
        error = replies[doomed[0]].json()["data"]
        assert error["code"] == "WORKER_LOST" and "died" in error["message"]
        state = http.get(f"/sessions/{doomed[0]}/state").json()["data"]
        assert state["failure"]["kind"] == "worker_lost" and state["truncated"] is True
        assert state["step_count"] == 0 and state["episode_id"]  # the episode as last known
        again = http.post(f"/sessions/{doomed[0]}/step", json=guess).json()["data"]
        assert again["code"] == "EPISODE_OVER"  # only reset may follow
        # the other sessions go on
        assert all(
            http.post(f"/sessions/{sid}/step", json=guess).json()["type"] == "observation"
            for sid in set(ids) - set(doomed)
        )
        # reset moves the failed session to a live actor; new sessions go to live actors only
        assert http.post(f"/sessions/{doomed[0]}/reset", json={"seed": 2}).json()["type"] == "observation"
        assert actor_of(app, doomed[0]) != 2
        assert http.post(f"/sessions/{doomed[0]}/step", json=guess).json()["type"] == "observation"
        fresh = [http.post("/sessions").json()["session_id"] for _ in range(6)]
        assert all(actor_of(app, sid) != 2 for sid in fresh)
        for sid in ids + fresh:
            http.delete(f"/sessions/{sid}")
    assert victim.sessions == 0 and wordle_hosts.sessions == 0


def test_ws_client_sees_a_typed_worker_lost_error(served: tuple[OmniApp, str], wordle_hosts: HostPool) -> None:
    _, url = served

    async def scenario() -> None:
        envs = [await AsyncWebSocketClient.connect(url) for _ in range(4)]
        try:
            for env in envs:
                await env.reset(seed=5)
            kill(wordle_hosts.hosts[0])
            outcomes = await asyncio.gather(
                *(env.step(ToolCall("guess", {"word": "crane"})) for env in envs), return_exceptions=True
            )
            lost = [o for o in outcomes if isinstance(o, WorkerLostError)]
            assert len(lost) == 1 and sum(isinstance(o, StepResult) for o in outcomes) == 3
            victim = envs[outcomes.index(lost[0])]
            with pytest.raises(EpisodeOverError):
                await victim.step(ToolCall("guess", {"word": "crane"}))
            await victim.reset(seed=6)  # the WebSocket survived: the session continues on a live actor
            result = await victim.step(ToolCall("guess", {"word": "crane"}))
            assert read_marks(result.observation.text) is not None
        finally:
            for env in envs:
                await env.close()

    asyncio.run(scenario())
    eventually(lambda: wordle_hosts.hosts[0].sessions == 0 and wordle_hosts.sessions == 0, 20)


def test_new_sessions_skip_an_actor_found_dead_while_opening(
    served: tuple[OmniApp, str], wordle_hosts: HostPool
) -> None:
    app, url = served
    kill(wordle_hosts.hosts[0])  # nobody has noticed yet: it is still the least loaded
    with httpx.Client(base_url=url, timeout=30) as http:
        replies = [http.post("/sessions").json() for _ in range(6)]
        ids = [reply["session_id"] for reply in replies]
        assert 0 not in {actor_of(app, sid) for sid in ids}
        assert not wordle_hosts.hosts[0].alive and wordle_hosts.hosts[0].sessions == 0
        for sid in ids:
            assert http.post(f"/sessions/{sid}/reset", json={"seed": 4}).json()["type"] == "observation"
            http.delete(f"/sessions/{sid}")


def test_a_dead_actor_is_replaced_and_its_replacement_takes_new_sessions(
    served: tuple[OmniApp, str], wordle_hosts: HostPool
) -> None:
    app, url = served
    guess = {"type": "call_tool", "tool_name": "guess", "arguments": {"word": "crane"}}
    with httpx.Client(base_url=url, timeout=30) as http:
        ids = [http.post("/sessions").json()["session_id"] for _ in range(8)]
        for sid in ids:
            assert http.post(f"/sessions/{sid}/reset", json={"seed": 1}).status_code == 200
        victim = wordle_hosts.hosts[1]
        kill(victim)
        replies = [http.post(f"/sessions/{sid}/step", json=guess).json() for sid in ids]
        assert sum(r["type"] == "error" and r["data"]["code"] == "WORKER_LOST" for r in replies) == 2
        assert wordle_hosts.replaced == 1  # started at the first failure, not at the next session

        eventually(lambda: len(wordle_hosts.live) == 4, 20)  # capacity is back
        replacement = wordle_hosts.live[-1]
        assert replacement.index == 4 and replacement.pid and replacement.pid != victim.pid
        fresh = [http.post("/sessions").json()["session_id"] for _ in range(2)]
        assert [actor_of(app, sid) for sid in fresh] == [4, 4]  # the least loaded: the replacement
        for sid in fresh:
            assert http.post(f"/sessions/{sid}/reset", json={"seed": 2}).json()["type"] == "observation"
            assert http.post(f"/sessions/{sid}/step", json=guess).json()["type"] == "observation"
        for sid in ids + fresh:
            http.delete(f"/sessions/{sid}")
    assert wordle_hosts.sessions == 0
