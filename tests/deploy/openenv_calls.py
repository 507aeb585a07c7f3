"""Drive a served environment with OpenEnv 0.10.0's own GenericEnvClient; run with OpenEnv's interpreter.

Usage: ``python openenv_calls.py URL TASK_ID CALLS_JSON``, where CALLS_JSON is a list of
``[tool_name, arguments]``. Prints one JSON line for the reset and one per call: the observation as
OpenEnv's client decoded it, the reward and done, so the calling test reads OpenEnv's view of the server.
"""

from __future__ import annotations

import json
import sys

from openenv.core import GenericEnvClient


def main(url: str, task_id: str, calls: str) -> None:
    with GenericEnvClient(base_url=url, message_timeout_s=300).sync() as env:
        reset = env.reset(task_id=task_id)
        print(json.dumps({"kind": "reset", "observation": reset.observation, "done": reset.done}), flush=True)
        for name, arguments in json.loads(calls):
            result = env.step({"type": "call_tool", "tool_name": name, "arguments": arguments})
            line = {"kind": "step", "tool": name, "observation": result.observation, "reward": result.reward}
            print(json.dumps(line | {"done": result.done}), flush=True)
        print(json.dumps({"kind": "state", "state": env.state()}, default=str), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
