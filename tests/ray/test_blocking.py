"""A blocking environment on Ray actors: its thread pool, and the server's step deadline."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
import ray.cloudpickle

import tests.ray.envs as envs
from omnienv.core import ToolCall
from omnienv.ray import HostPool, RemoteEnv
from omnienv.ray.serving import create_ray_app
from omnienv.server import running
from tests.polling import eventually

pytestmark = pytest.mark.usefixtures("ray_local")
ray.cloudpickle.register_pickle_by_value(envs)  # the actors need not import the test package


@pytest.fixture
def slow_hosts(ray_local: None) -> Iterator[HostPool]:
    with HostPool(envs.SlowWork, 2, options={"num_cpus": 0.5}) as hosts:
        yield hosts


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"type": "call_tool", "tool_name": name, "arguments": arguments}


def test_blocking_tools_run_on_the_hosts_pool_and_a_hung_step_hits_the_deadline(slow_hosts: HostPool) -> None:
    app = create_ray_app(envs.SlowWork, slow_hosts, step_timeout=1.0, idle_timeout=None)
    with running(app, timeout=30) as url, httpx.Client(base_url=url, timeout=30) as http:
        sid = http.post("/sessions").json()["session_id"]
        assert http.post(f"/sessions/{sid}/reset", json={}).json()["type"] == "observation"
        where = http.post(f"/sessions/{sid}/step", json=call("where")).json()["data"]
        assert where["observation"]["result"]["content"][0]["text"].startswith("omnienv-host")

        first = app.state.manager.sessions[sid].env
        assert isinstance(first, RemoteEnv)
        hung = http.post(f"/sessions/{sid}/step", json=call("stall", seconds=5)).json()["data"]
        assert hung["code"] == "STEP_TIMEOUT"
        assert http.get(f"/sessions/{sid}/state").json()["data"]["failure"]["kind"] == "step_timeout"
        # reset gives the session a fresh environment; the stuck one is closed in the background
        assert http.post(f"/sessions/{sid}/reset", json={}).json()["type"] == "observation"
        assert app.state.manager.sessions[sid].env is not first
        assert http.post(f"/sessions/{sid}/step", json=call("where")).json()["type"] == "observation"
        assert http.delete(f"/sessions/{sid}").status_code == 200


def test_an_actor_whose_blocking_step_hangs_still_ends_when_its_pool_shuts_down(tmp_path: Path) -> None:
    """Shutting down, an actor exits through Ray, and Python first waits for the host's threads:
    one stuck in a tool would keep the process alive for good, past ``ray.kill`` too (the actor
    has begun exiting). The actor ends itself when the pool's time is up."""
    started = tmp_path / "started"
    hosts = HostPool(envs.SlowWork, 1, options={"num_cpus": 0.5})
    pid = hosts.hosts[0].pid

    async def hang() -> None:
        env = await RemoteEnv.open(hosts)
        await env.reset()
        step = asyncio.ensure_future(env.step(ToolCall("stall", {"seconds": 600, "started": str(started)})))
        try:
            await asyncio.to_thread(eventually, started.exists, 30, "the stalling step starts on the actor")
        finally:
            step.cancel()  # the front stops waiting; the actor's thread stays stuck in the tool

    try:
        asyncio.run(hang())
        hosts.shutdown(timeout=2)
        eventually(lambda: not psutil.pid_exists(pid), 20, "the actor's process ends despite its stuck thread")
    finally:
        hosts.shutdown()  # idempotent
        if psutil.pid_exists(pid):  # reaped even when the test failed
            os.kill(pid, signal.SIGKILL)
