"""The transports test_server.py leaves out, with every session on a Ray host actor: the MCP SDK's
streamable HTTP (normal and agent-only), ORS and NeMo Gym each play a Wordle game to its end and
score it as the same task and guesses do in-process; and a sandboxed environment (Jupyter) plays
an episode on an actor over /ws and leaves no kernel, bwrap or sandbox folder behind."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import psutil
import pytest
import ray
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from omnienv.client import WebSocketClient
from omnienv.core import ToolCall
from omnienv.envs.jupyter import jupyter_tasks
from omnienv.envs.wordle import Wordle
from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.ray import HostPool, RemoteEnv
from omnienv.ray.placement import Host
from omnienv.ray.serving import create_ray_app
from omnienv.sandboxes.cgroups import probe
from omnienv.sandboxes.jupyter.pool import sweep_stale
from omnienv.server import OmniApp, running
from omnienv.server.sessions import MCP, NEMO_GYM, ORS, Session
from tests.polling import eventually
from tests.ray.conftest import ACTOR

pytestmark = pytest.mark.usefixtures("ray_local")

TASK = "test/0004"  # the answer is CUING
TOKEN = "operator-secret"
OPERATOR = {"authorization": f"Bearer {TOKEN}"}


@dataclass(frozen=True)
class Game:
    """A Wordle game played in-process: the guesses, what each answered, and the final reward."""

    guesses: tuple[str, ...]
    texts: tuple[str, ...]
    reward: float


@pytest.fixture(scope="module")
def local_game() -> Game:
    env = Wordle()
    env.reset(TASK)
    history: list[tuple[str, str]] = []
    guesses, texts = [], []
    for _ in range(6):
        word = next_guess(history)
        result = env.step(ToolCall("guess", {"word": word}))
        marks = read_marks(result.observation.text)
        assert marks is not None, result.observation.text
        history.append(marks)
        guesses.append(word)
        texts.append(result.observation.text)
        if result.done:
            break
    assert result.done and "Correct!" in texts[-1] and len(guesses) > 1
    assert result.reward > 1.0 and result.reward == env.episode_reward  # the rubric's, all at the end
    return Game(tuple(guesses), tuple(texts), result.reward)


@pytest.fixture(scope="module")
def hosts(ray_local: None) -> Iterator[HostPool]:
    """Two Wordle host actors for the whole module (each start costs both CPUs for seconds)."""
    with HostPool("wordle", 2, options=ACTOR) as pool:
        yield pool


@pytest.fixture(scope="module")
def served(hosts: HostPool) -> Iterator[tuple[OmniApp, str]]:
    app = create_ray_app("wordle", hosts, idle_timeout=None)
    with running(app, timeout=30) as url:
        yield app, url


@pytest.fixture(scope="module")
def agent_only(hosts: HostPool) -> Iterator[tuple[OmniApp, str]]:
    """An agent-only server on the same actors: the operator starts and scores, the agent plays over MCP."""
    app = create_ray_app("wordle", hosts, idle_timeout=None, agent_only=True, operator_token=TOKEN)
    with running(app, timeout=30) as url:
        yield app, url


def on_actor(app: OmniApp, session: Session, hosts: HostPool) -> Host:
    """The live actor ``session`` lives on, as the front and the actor itself both say."""
    env = session.env
    assert isinstance(env, RemoteEnv) and env.host is not None and env.host.alive, env
    assert env.host in hosts.hosts and app.state.manager.sessions[session.id] is session
    held = [info["sessions"] for info in ray.get([host.actor.info.remote() for host in hosts.hosts], timeout=30)]
    assert held[hosts.hosts.index(env.host)] == 1 and sum(held) == 1, held  # the actor holds this one environment
    return env.host


def only_session(app: OmniApp, family: str) -> Session:
    sessions = list(app.state.manager.sessions.values())
    assert [s.family for s in sessions] == [family], sessions
    return sessions[0]


def all_closed(app: OmniApp, hosts: HostPool) -> bool:
    if app.state.manager.active or hosts.sessions:
        return False
    return [info["sessions"] for info in ray.get([h.actor.info.remote() for h in hosts.hosts], timeout=30)] == [0, 0]


def on_loop(app: OmniApp, coroutine: Any) -> Any:
    """Run a coroutine on the server's own event loop (the actor's connection lives there)."""
    loop = app.state.manager.loop
    assert loop is not None
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result(30)


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 60))


async def play_mcp(session: ClientSession, game: Game) -> list[str]:
    texts = []
    for word in game.guesses:
        result = await session.call_tool("guess", {"word": word})
        assert result.is_error is False, result
        texts.append(result.content[0].text)
    return texts


# -- the MCP SDK's client over streamable HTTP --------------------------------------------------


def test_the_mcp_sdk_client_plays_wordle_to_the_end_on_an_actor(
    served: tuple[OmniApp, str], hosts: HostPool, local_game: Game
) -> None:
    app, url = served

    async def main() -> tuple[list[str], Any, Any]:
        async with (
            streamable_http_client(f"{url}/mcp?task_id={TASK}") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            played = only_session(app, MCP)
            await asyncio.to_thread(on_actor, app, played, hosts)
            texts = await play_mcp(session, local_game)
            state = await asyncio.to_thread(on_loop, app, played.env.state())
            after = await session.call_tool("guess", {"word": "crane"})
            return texts, state, after

    texts, state, after = run(main())
    assert texts == list(local_game.texts)  # the same game, move for move
    assert state.done and not state.truncated and state.task_id == TASK
    assert state.reward == local_game.reward  # exactly the in-process score
    assert after.is_error is True and "EPISODE_OVER" in after.content[0].text
    eventually(lambda: all_closed(app, hosts), 20, "the MCP session's environment closed on its actor")


def test_the_operator_scores_an_agent_only_mcp_episode_played_on_an_actor(
    agent_only: tuple[OmniApp, str], hosts: HostPool, local_game: Game
) -> None:
    app, url = agent_only
    with httpx.Client(base_url=url, trust_env=False, timeout=30) as http:
        started = http.post("/operator/sessions", json={"task_id": TASK}, headers=OPERATOR)
        assert started.status_code == 201, started.text
        session_id, path = started.json()["session_id"], started.json()["mcp_path"]
        on_actor(app, app.state.manager.sessions[session_id], hosts)

        async def main() -> list[str]:
            async with streamable_http_client(url + path) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await play_mcp(session, local_game)

        assert run(main()) == list(local_game.texts)
        state = http.get(f"/operator/sessions/{session_id}/state", headers=OPERATOR).json()["data"]
        assert (state["done"], state["truncated"], state["task_id"]) == (True, False, TASK)
        assert state["step_count"] == len(local_game.guesses)
        assert state["reward"] == local_game.reward  # exactly the in-process score
        closed = http.delete(f"/operator/sessions/{session_id}", headers=OPERATOR).json()
        assert closed["closed"] or closed["closing"]
    eventually(lambda: all_closed(app, hosts), 20, "the operator's session closed on its actor")


# -- ORS ----------------------------------------------------------------------------------------


def sse_events(response: httpx.Response) -> list[tuple[str, str]]:
    """(event, data) pairs of an SSE body, pings skipped."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events, event, data = [], None, []
    for line in response.text.replace("\r\n", "\n").split("\n"):
        if not line:
            if event is not None:
                events.append((event, "\n".join(data)))
            event, data = None, []
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            if name == "event":
                event = value.strip()
            elif name == "data":
                data.append(value.lstrip())
    return events


def test_ors_plays_wordle_to_the_end_on_an_actor(
    served: tuple[OmniApp, str], hosts: HostPool, local_game: Game
) -> None:
    app, url = served
    with httpx.Client(base_url=url, trust_env=False, timeout=30) as http:
        minted = sse_events(http.post("/create_session"))
        assert minted[0][0] == "task_id" and minted[-1][0] == "end"
        sid = minted[0][1]
        headers = {"X-Session-ID": sid}
        created = http.post("/create", json={"env_name": "wordle", "task_spec": {"id": TASK}}, headers=headers)
        assert created.status_code == 200 and created.json() == {"sid": sid}, created.text
        bound = app.state.manager.bindings.get(ORS, sid)
        assert bound is not None
        on_actor(app, bound[0], hosts)
        outputs = []
        for word in local_game.guesses:
            events = sse_events(
                http.post("/wordle/call", json={"name": "guess", "input": {"word": word}}, headers=headers)
            )
            kind, data = events[-1]
            assert kind == "end", events
            reply = orjson.loads(data)
            assert reply["ok"], reply
            outputs.append(reply["output"])
        assert [output["blocks"][0]["text"] for output in outputs] == list(local_game.texts)
        assert [output["finished"] for output in outputs] == [False] * (len(outputs) - 1) + [True]
        assert outputs[-1]["reward"] == local_game.reward  # exactly the in-process score
        assert all(output["reward"] == 0.0 for output in outputs[:-1])
        assert outputs[-1]["metadata"]["info"]["success"] is True
        assert http.post("/delete", headers=headers).json() == {"sid": sid}
    eventually(lambda: all_closed(app, hosts), 20, "the ORS session's environment closed on its actor")


# -- NeMo Gym -----------------------------------------------------------------------------------


def test_nemo_gym_plays_wordle_to_the_end_on_an_actor_and_verify_scores_it(
    served: tuple[OmniApp, str], hosts: HostPool, local_game: Game
) -> None:
    app, url = served
    row = {"responses_create_params": {"input": [{"role": "user", "content": "play"}]}, "task_id": TASK}
    with httpx.Client(base_url=url, trust_env=False, timeout=30) as http:
        seeded = http.post("/seed_session", json=row)
        assert seeded.status_code == 200 and seeded.json() == {}, seeded.text
        on_actor(app, only_session(app, NEMO_GYM), hosts)
        texts, done = [], []
        for word in local_game.guesses:
            reply = http.post("/guess", json={"word": word})
            assert reply.status_code == 200 and "x-omnienv-error" not in reply.headers, reply.text
            texts.append(reply.text)
            done.append(reply.headers["x-omnienv-done"])
        assert texts == list(local_game.texts)
        assert done == ["false"] * (len(done) - 1) + ["true"]
        response = {"id": "r", "object": "response", "output": []}
        verified = http.post("/verify", json={**row, "response": response})
        assert verified.status_code == 200, verified.text
        body = verified.json()
        assert body["reward"] == local_game.reward  # exactly the in-process score
        assert body["done"] is True and body["truncated"] is False
        assert body["mask_sample"] is False and body["failure_kind"] is None
        assert http.post("/close_session", json={}).json() == {"closed": True}
    eventually(lambda: all_closed(app, hosts), 20, "the NeMo Gym session's environment closed on its actor")


# -- a sandboxed environment: Jupyter -----------------------------------------------------------


def sandboxes_of(pid: int) -> list[psutil.Process]:
    """The processes ``pid`` started (bwrap's and the kernels inside): their command lines and
    environments name nothing of the test's (bwrap reads its arguments from a pipe)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def kernels(processes: list[psutil.Process]) -> int:
    """How many of ``processes`` are kernels (bwrap's command lines name the kernel's too)."""
    count = 0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            command = process.cmdline()
            count += bool(command) and "bwrap" not in command[0] and "/opt/kernel/boot.py" in command
    return count


def test_a_jupyter_episode_on_an_actor_over_ws_wins_and_leaves_nothing_behind(ray_local: None) -> None:
    base = tempfile.mkdtemp(prefix="oj-")  # the actor's temp dir: its sandboxes, and only they, are here
    task = jupyter_tasks("test")[0]
    options = {**ACTOR, "runtime_env": {"env_vars": {"TMPDIR": base, "OMNIENV_JUPYTER_POOL_SIZE": "1"}}}
    started: dict[int, psutil.Process] = {}
    roots: set[str] = set()
    cgroups = probe().parents.values()

    def seen() -> list[psutil.Process]:
        """The actor's sandboxes now, remembered (processes and folders) to check they are gone later."""
        found = sandboxes_of(host.pid)
        started.update((process.pid, process) for process in found)
        roots.update(path.name for path in Path(base).iterdir())
        return found

    def left() -> list[str]:
        running = [f"process {p.pid}" for p in started.values() if p.is_running()]
        folders = [f"folder {path}" for path in Path(base).iterdir()]
        groups = [f"cgroup {parent / name}" for parent in cgroups for name in roots if (parent / name).exists()]
        return running + folders + groups

    try:
        with HostPool("jupyter", 1, options=options) as pool:
            host = pool.hosts[0]
            app = create_ray_app("jupyter", pool, idle_timeout=None)
            with running(app, timeout=30) as url, WebSocketClient(url) as env:
                prompt = env.reset(task.id)
                assert task.data["question"] in prompt.text
                assert kernels(seen()) >= 1, "the episode's kernel is no child of the actor"
                code = "import os\nprint('files:', sorted(os.listdir()))"
                cell = env.step(ToolCall("add_and_execute_code_cell", {"code": code}))
                assert not cell.observation.is_error and not cell.done, cell
                assert cell.observation.text == f"files: {sorted(task.data['files'])}"  # the task's, in the sandbox
                answer = env.step(ToolCall("final_answer", {"answer": str(task.answer)}))
                assert answer.done and not answer.truncated and answer.failure is None, answer
                assert answer.info["success"] is True
                assert answer.reward == pytest.approx(1.0 + 0.1 * 1.0)  # correct, in the fewest calls
            eventually(lambda: app.state.manager.active == 0 and pool.sessions == 0, 20)
            assert ray.get(host.actor.info.remote(), timeout=30)["sessions"] == 0
            # the episode's kernel went with its session; the warm pool's spare is still there
            eventually(
                lambda: kernels(seen()) == 1 and len(list(Path(base).iterdir())) == 1,
                60,
                "one kernel and its folder (the pool's spare) left on the actor",
            )
            assert len(roots) >= 2  # the episode's sandbox and the spare's
        # the pool is shut down: the actor closed what it held and exited, its pool's spare with it
        eventually(lambda: not psutil.pid_exists(host.pid), 30, "the Jupyter actor's process exits")
        deadline = time.monotonic() + 30
        while left() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left() == []
    finally:
        leftover = [process for process in started.values() if process.is_running()]
        for process in leftover:  # reaped even when the test failed
            with contextlib.suppress(psutil.Error):
                process.kill()
        sweep_stale(base, unlocked_grace=0)  # what a failed run left: mounts, cgroups, folders
        shutil.rmtree(base, ignore_errors=True)
    assert leftover == []
