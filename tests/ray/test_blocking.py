"""A blocking environment on Ray actors: its thread pool, and the server's step deadline."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import ray.cloudpickle

import tests.ray.envs as envs
from omnienv.ray import HostPool, RemoteEnv
from omnienv.ray.serving import create_ray_app
from omnienv.server import running

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
