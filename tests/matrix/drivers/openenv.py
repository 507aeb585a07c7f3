"""OpenEnv 0.10.0's own client, relaying the conformance matrix's calls; runs in OpenEnv's virtualenv.

That virtualenv holds OpenEnv and nothing of ours, as a user who installs only OpenEnv has it
(``tests/peers/test_openenv.py`` relies on that), so the agent, the environment's scripted player,
lives in the matrix's process (:mod:`tests.matrix.frameworks.openenv`) and sends each request
here as one JSON line on stdin; every answer is one JSON line on stdout: what OpenEnv's
``GenericEnvClient`` returned, as that client parsed it (``StepResult``'s observation, reward,
done and metadata), or ``{"error": ...}`` with the message OpenEnv's client raised.

Requests: ``{"op": "connect", "url"}``, ``{"op": "reset", "kwargs"}``, ``{"op": "step",
"action"}`` (an OpenEnv MCP action, sent as a ``GenericAction``), ``{"op": "state"}``,
``{"op": "close"}``. The driver ends when stdin does, closing any client still open. Run it as
``python -m tests.matrix.drivers.openenv``: as a script, its own name would shadow OpenEnv's package.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from openenv.core import GenericAction, GenericEnvClient, SyncEnvClient
from openenv.core.client_types import StepResult


def _result(result: StepResult[dict[str, Any]]) -> dict[str, Any]:
    return {
        "observation": result.observation,
        "reward": result.reward,
        "done": result.done,
        "metadata": result.metadata,
    }


def answer(client: SyncEnvClient[Any, Any, Any] | None, request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``(the client from now on, the answer)`` to one request."""
    op = request.get("op")
    if op == "connect":
        if client is not None:
            client.close()
        client = GenericEnvClient(base_url=request["url"]).sync().connect()
        return client, {"base_url": client.base_url}
    if client is None:
        raise RuntimeError(f"'{op}' before 'connect'")
    if op == "reset":
        return client, _result(client.reset(**request.get("kwargs", {})))
    if op == "step":
        return client, _result(client.step(GenericAction(**request["action"])))
    if op == "state":
        return client, {"state": client.state()}
    if op == "close":
        client.close()
        return None, {"closed": True}
    raise ValueError(f"unknown op {op!r}: send connect, reset, step, state or close")


def main() -> None:
    replies = sys.stdout
    sys.stdout = sys.stderr  # anything else that prints cannot garble the replies
    client: SyncEnvClient[Any, Any, Any] | None = None
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                client, reply = answer(client, json.loads(line))
            except Exception as exc:
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            replies.write(json.dumps(reply, default=repr) + "\n")
            replies.flush()
    finally:
        if client is not None:
            client.close()


if __name__ == "__main__":
    main()
