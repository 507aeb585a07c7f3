"""NeMo Gym's own servers and rollout collection, in one process of nemo-gym's virtualenv.

A *lane* is one NeMo agent (``simple_agent`` or ``gymnasium_agent``) bound to one of our
resources servers and one model endpoint, reached by rollout collection through NeMo's own
``legacy_agent`` environment-server relay, as NeMo 0.7.0 routes every rollout. :func:`serving`
runs every lane's agent and relay on 127.0.0.1 in one event loop (NeMo's shared aiohttp client
belongs to one loop) and :func:`collect_rollouts` runs NeMo's ``ng_collect_rollouts`` command
on a JSONL whose rows name their lane's agent (``agent_ref``). The global config NeMo's
processes read is handed over in ``NEMO_GYM_CONFIG_DICT``, as NeMo's launcher does; no head
server, no Ray.

Call :func:`install_config` before importing anything from ``nemo_gym``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

AGENTS = "responses_api_agents"


@dataclass(frozen=True)
class Lane:
    name: str
    """The agent's name, which rows name in ``agent_ref``."""
    agent: str
    """``simple_agent`` or ``gymnasium_agent``."""
    resources: str
    """Our resources server's URL."""
    model: str
    """The model's OpenAI-compatible base URL (``.../v1``)."""
    max_steps: int = 12

    @property
    def resources_name(self) -> str:
        return f"{self.name}_resources"

    @property
    def model_name(self) -> str:
        return f"{self.name}_model"

    @property
    def relay_name(self) -> str:
        return f"{self.name}_environment_server"


def _address(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    return {"host": parts.hostname, "port": parts.port, "entrypoint": "app.py"}


def install_config(lanes: list[Lane]) -> dict[str, Any]:
    """The global config of every lane's resources server and model, set for NeMo to read."""
    config: dict[str, Any] = {"head_server": {"host": "127.0.0.1", "port": 1}}  # never contacted
    for lane in lanes:
        config[lane.resources_name] = {"resources_servers": {lane.resources_name: _address(lane.resources)}}
        config[lane.model_name] = {"responses_api_models": {lane.model_name: _address(lane.model)}}
    os.environ["NEMO_GYM_CONFIG_DICT"] = json.dumps(config)
    sys.argv = sys.argv[:1]  # NeMo parses the command line as hydra overrides on first config access
    return config


def _agent(lane: Lane, client: Any) -> Any:
    from nemo_gym.config_types import ModelServerRef, ResourcesServerRef

    refs = {
        "host": "127.0.0.1",
        "port": 0,
        "entrypoint": "app.py",
        "name": lane.name,
        "max_steps": lane.max_steps,
        "resources_server": ResourcesServerRef(type="resources_servers", name=lane.resources_name),
        "model_server": ModelServerRef(type="responses_api_models", name=lane.model_name),
    }
    if lane.agent == "gymnasium_agent":
        from responses_api_agents.gymnasium_agent.app import GymnasiumAgent, GymnasiumAgentConfig

        return GymnasiumAgent(config=GymnasiumAgentConfig(**refs), server_client=client)
    from responses_api_agents.simple_agent.app import SimpleAgent, SimpleAgentConfig

    return SimpleAgent(config=SimpleAgentConfig(**refs), server_client=client)


def _relay(lane: Lane, client: Any) -> Any:
    from environment_servers.legacy_agent.app import LegacyAgentEnvironmentServer, LegacyAgentEnvironmentServerConfig
    from nemo_gym.config_types import AgentServerRef

    config = LegacyAgentEnvironmentServerConfig(
        host="127.0.0.1",
        port=0,
        entrypoint="app.py",
        name=lane.relay_name,
        agent_server=AgentServerRef(type=AGENTS, name=lane.name),
    )
    return LegacyAgentEnvironmentServer(config=config, server_client=client)


@contextmanager
def _uvicorn(apps: list[Any], timeout: float = 60.0) -> Iterator[list[int]]:
    """``apps`` on free 127.0.0.1 ports, served by one event loop in a thread; always shut down."""
    import uvicorn

    servers = [
        uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
        for app in apps
    ]
    loop = asyncio.new_event_loop()

    async def serve() -> None:
        await asyncio.gather(*(server.serve() for server in servers))

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not all(server.started for server in servers):
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("NeMo's agent servers did not start")
            time.sleep(0.01)
        yield [server.servers[0].sockets[0].getsockname()[1] for server in servers]
    finally:
        for server in servers:
            server.should_exit = True
        thread.join(30)
        loop.close()


@contextmanager
def serving(lanes: list[Lane], config: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every lane's agent and relay, running; yields the full global config naming them all."""
    from nemo_gym.config_types import BaseServerConfig
    from nemo_gym.server_utils import ServerClient
    from omegaconf import OmegaConf

    live = OmegaConf.create(config)
    client = ServerClient(head_server_config=BaseServerConfig(host="127.0.0.1", port=1), global_config_dict=live)
    apps = []
    for lane in lanes:
        apps += [_agent(lane, client).setup_webserver(), _relay(lane, client).setup_webserver()]
    with _uvicorn(apps) as ports:
        full = dict(config)
        for index, lane in enumerate(lanes):
            agent_port, relay_port = ports[2 * index], ports[2 * index + 1]
            full[lane.name] = {AGENTS: {lane.agent: {"host": "127.0.0.1", "port": agent_port}}}
            relay = {"host": "127.0.0.1", "port": relay_port, "entrypoint": "app.py"}
            relay["agent_server"] = {"type": AGENTS, "name": lane.name}
            full[lane.relay_name] = {"environment_servers": {"legacy_agent": relay}}
            live[lane.name] = full[lane.name]
            live[lane.relay_name] = full[lane.relay_name]
        yield full


def collect_rollouts(
    config: dict[str, Any], rows: list[dict[str, Any]], out: Path, timeout: float = 240
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
    """NeMo's own ``ng_collect_rollouts`` on ``rows``: ``(rollouts, failed rollouts, metrics)``.

    Failed rollouts go to NeMo's failures sidecar (``route_failures_to_sidecar``) instead of
    ending the run: they carry no reward.
    """
    out.mkdir(parents=True, exist_ok=True)
    inputs = out / "rows.jsonl"
    inputs.write_text("".join(json.dumps(row) + "\n" for row in rows))
    rollouts = out / "rollouts.jsonl"
    run = {
        **config,
        "input_jsonl_fpath": str(inputs),
        "output_jsonl_fpath": str(rollouts),
        "route_failures_to_sidecar": True,
        "disable_health_check": True,
    }
    command = [str(Path(sys.executable).with_name("ng_collect_rollouts"))]
    env = {**os.environ, "NEMO_GYM_CONFIG_DICT": json.dumps(run)}
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"ng_collect_rollouts failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    failures = rollouts.with_name("rollouts_failures.jsonl")

    def read(path: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []

    metrics = rollouts.with_name("rollouts_aggregate_metrics.json")
    return read(rollouts), read(failures), json.loads(metrics.read_text()) if metrics.exists() else None


def main() -> None:
    """Collect what ``OMNIENV_NEMO`` (JSON: ``lanes``, ``rows``, ``out``) asks; print JSON lines."""
    spec = json.loads(os.environ["OMNIENV_NEMO"])
    lanes = [Lane(**lane) for lane in spec["lanes"]]
    config = install_config(lanes)
    with serving(lanes, config) as full:
        rollouts, failures, metrics = collect_rollouts(full, spec["rows"], Path(spec["out"]))
    for rollout in rollouts:
        print(json.dumps({"kind": "rollout", "rollout": rollout}), flush=True)
    for failure in failures:
        print(json.dumps({"kind": "failure", "failure": failure}), flush=True)
    print(json.dumps({"kind": "metrics", "metrics": metrics}), flush=True)
