"""NeMo Gym 0.7.0's own ``simple_agent`` plays Wordle on an omnienv server, end to end.

OMNIENV_URL is our server, OMNIENV_ROWS a dataset from ``omnienv export nemo-gym``. Here, in
nemo-gym's virtualenv, run on 127.0.0.1 (free ports, uvicorn threads, no Ray): a scripted
Responses-API model server (it plays the solver's guesses as function calls) and NeMo's
``SimpleAgent``. ``POST /run`` on the agent then does what NeMo's rollout collection does:
``/seed_session``, the model/tool loop (tool calls carry the cookie) and ``/verify``.
Prints one JSON line per rollout.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from urllib.parse import urlsplit

import requests
import uvicorn

URL = urlsplit(os.environ["OMNIENV_URL"])
RESOURCES, MODEL, AGENT = "omnienv_wordle", "scripted_model", "wordle_agent"
CONFIG: dict[str, Any] = {
    "head_server": {"host": "127.0.0.1", "port": 1},  # never contacted: the config is injected
    RESOURCES: {"resources_servers": {RESOURCES: {"host": URL.hostname, "port": URL.port}}},
}
os.environ["NEMO_GYM_CONFIG_DICT"] = json.dumps(CONFIG)
sys.argv = sys.argv[:1]  # NeMo parses the command line as hydra overrides on first config access

from fastapi import FastAPI, Request  # noqa: E402
from nemo_gym.config_types import BaseServerConfig, ModelServerRef, ResourcesServerRef  # noqa: E402
from nemo_gym.server_utils import ServerClient  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from responses_api_agents.simple_agent.app import SimpleAgent, SimpleAgentConfig  # noqa: E402

from omnienv.envs.wordle.solver import next_guess, read_marks  # noqa: E402


def scripted_model() -> FastAPI:
    """A Responses-API model that answers with the solver's next guess as a function call."""
    app = FastAPI()
    calls = {"n": 0}

    @app.post("/v1/responses")
    async def responses(request: Request) -> dict[str, Any]:
        body = await request.json()
        history = []
        for item in body.get("input", []):
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                marks = read_marks(item["output"])  # our tool replies are the observation's text
                if marks:
                    history.append(marks)
        calls["n"] += 1
        if history and history[-1][1] == "🟩" * 5:
            output = [
                {
                    "type": "message",
                    "id": f"msg_{calls['n']}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Solved.", "annotations": []}],
                }
            ]
        else:
            output = [
                {
                    "type": "function_call",
                    "id": f"fc_{calls['n']}",
                    "call_id": f"call_{calls['n']}",
                    "name": "guess",
                    "arguments": json.dumps({"word": next_guess(history)}),
                    "status": "completed",
                }
            ]
        return {
            "id": f"resp_{calls['n']}",
            "created_at": time.time(),
            "model": "scripted",
            "object": "response",
            "output": output,
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
        }

    return app


@contextmanager
def serving(app: Any) -> Iterator[int]:
    """``app`` on a free 127.0.0.1 port in a thread; always shut down."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("a server did not start")
            time.sleep(0.01)
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(15)


def rollouts(agent_port: int, rows: list[dict[str, Any]]) -> None:
    """``POST /run`` per row, as NeMo's rollout collection does (plain requests: NeMo's shared
    aiohttp client belongs to the agent's event loop, in its server thread)."""
    for row in rows:
        reply = requests.post(f"http://127.0.0.1:{agent_port}/run", json=row, timeout=120)
        body = reply.json()
        assert reply.status_code == 200, body
        calls = [item for item in body["response"]["output"] if item["type"] == "function_call"]
        outputs = [item["output"] for item in body["response"]["output"] if item["type"] == "function_call_output"]
        print(
            json.dumps(
                {
                    "kind": "run",
                    "task_id": body["task_id"],
                    "reward": body["reward"],
                    "guesses": len(calls),
                    "last": outputs[-1],
                    "mask_sample": body["mask_sample"],
                    "done": body["done"],
                }
            ),
            flush=True,
        )


def main() -> None:
    with open(os.environ["OMNIENV_ROWS"]) as file:
        rows = [json.loads(line) for line in file][:2]
    global_config = OmegaConf.create(CONFIG)
    client = ServerClient(
        head_server_config=BaseServerConfig(host="127.0.0.1", port=1), global_config_dict=global_config
    )
    config = SimpleAgentConfig(
        host="127.0.0.1",
        port=0,
        entrypoint="app.py",
        name=AGENT,
        max_steps=12,
        resources_server=ResourcesServerRef(type="resources_servers", name=RESOURCES),
        model_server=ModelServerRef(type="responses_api_models", name=MODEL),
    )
    agent = SimpleAgent(config=config, server_client=client)
    with ExitStack() as stack:
        model_port = stack.enter_context(serving(scripted_model()))
        agent_port = stack.enter_context(serving(agent.setup_webserver()))
        global_config[MODEL] = {"responses_api_models": {MODEL: {"host": "127.0.0.1", "port": model_port}}}
        global_config[AGENT] = {"responses_api_agents": {AGENT: {"host": "127.0.0.1", "port": agent_port}}}
        rollouts(agent_port, rows)


if __name__ == "__main__":
    main()
