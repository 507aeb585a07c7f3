"""Wordle as a NeMo Gym resources server: omnienv serves it, NeMo Gym's ``ServerClient`` plays it.

    .venvs/nemo_gym/bin/python examples/nemo_gym_wordle.py                          # serves, then plays
    .venvs/nemo_gym/bin/python examples/nemo_gym_wordle.py --url http://127.0.0.1:8000   # `omnienv serve wordle`

(nemo-gym 0.7.0 asks for Python >= 3.13.14; tests/peers/nemo_gym installs it on 3.11.)
The dataset rows come from ``omnienv export nemo-gym wordle --split test``; each rollout is
``/seed_session`` (sets the signed cookie), one ``POST /guess`` per function call, then
``/verify`` with the final Responses object, which returns the reward. NeMo's ServerClient
joins ``http://host:port`` with the path, so it is given the server's root URL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from contextlib import ExitStack
from typing import Any
from urllib.parse import urlsplit

from omnienv.dialects.nemo_gym import nemo_gym_rows
from omnienv.envs.wordle import Wordle
from omnienv.envs.wordle.solver import next_guess, read_marks

SERVER = "omnienv_wordle"


async def play(url: str, rows: list[dict[str, Any]]) -> None:
    address = urlsplit(url)
    config = {  # what NeMo's launcher would inject: where each server listens
        "head_server": {"host": "127.0.0.1", "port": 1},  # unused: the config is given, not fetched
        SERVER: {"resources_servers": {SERVER: {"host": address.hostname, "port": address.port}}},
    }
    os.environ["NEMO_GYM_CONFIG_DICT"] = json.dumps(config)
    sys.argv = sys.argv[:1]  # NeMo would read the command line as hydra overrides
    from nemo_gym.config_types import BaseServerConfig
    from nemo_gym.server_utils import ServerClient
    from omegaconf import OmegaConf

    client = ServerClient(
        head_server_config=BaseServerConfig(host="127.0.0.1", port=1), global_config_dict=OmegaConf.create(config)
    )
    for row in rows:
        seeded = await client.post(server_name=SERVER, url_path="/seed_session", json=row)
        cookies = seeded.cookies  # the session: send it back with every call
        history: list[tuple[str, str]] = []
        items: list[dict[str, object]] = []
        while len(history) < 6 and not (history and history[-1][1] == "🟩" * 5):
            word = next_guess(history)
            reply = await client.post(server_name=SERVER, url_path="/guess", json={"word": word}, cookies=cookies)
            body = await reply.text()  # what a NeMo agent hands the model as function_call_output
            items += [
                {
                    "type": "function_call",
                    "call_id": f"c{len(history)}",
                    "name": "guess",
                    "arguments": json.dumps({"word": word}),
                },
                {"type": "function_call_output", "call_id": f"c{len(history)}", "output": body},
            ]
            marks = read_marks(body)  # the body is the observation text itself
            assert marks is not None, body
            history.append(marks)
        response = {
            "id": "resp",
            "created_at": 0,
            "model": "scripted",
            "object": "response",
            "output": items,
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
        }
        verified = await client.post(
            server_name=SERVER, url_path="/verify", json={**row, "response": response}, cookies=cookies
        )
        reward = (await verified.json())["reward"]
        await client.post(server_name=SERVER, url_path="/close_session", json={}, cookies=cookies)
        print(f"{row['task_id']}: {len(history)} guesses, /verify reward {reward:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="an omnienv server already serving wordle (default: start one here)")
    parser.add_argument("--episodes", type=int, default=3)
    args = parser.parse_args()
    with ExitStack() as stack:
        url = args.url
        if url is None:
            from omnienv.app import create_app
            from omnienv.server import running

            url = stack.enter_context(running(create_app("wordle")))
        rows = list(nemo_gym_rows(Wordle, "test", limit=args.episodes))  # the dataset
        asyncio.run(play(url, rows))


if __name__ == "__main__":
    main()
