"""nemo-gym 0.7.0's own ServerClient plays Wordle on an omnienv server.

OMNIENV_URL is the server, OMNIENV_ROWS a JSONL dataset written by ``omnienv export nemo-gym``.
No NeMo server or Ray is started: the client is given the server's address in its global
config, the way NeMo's launcher hands it to its own processes. Prints one JSON line per check.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from urllib.parse import urlsplit

URL = urlsplit(os.environ["OMNIENV_URL"])
SERVER = "omnienv_wordle"
CONFIG = {
    "head_server": {"host": "127.0.0.1", "port": 1},  # never contacted: the config is injected
    SERVER: {"resources_servers": {SERVER: {"host": URL.hostname, "port": URL.port}}},
}
os.environ["NEMO_GYM_CONFIG_DICT"] = json.dumps(CONFIG)
sys.argv = sys.argv[:1]  # NeMo parses the command line as hydra overrides on first config access

from nemo_gym.base_resources_server import BaseRunRequest, BaseVerifyResponse  # noqa: E402
from nemo_gym.config_types import BaseServerConfig  # noqa: E402
from nemo_gym.openai_utils import NeMoGymResponse  # noqa: E402
from nemo_gym.server_utils import ServerClient  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from omnienv.envs.wordle.solver import next_guess, read_marks  # noqa: E402


def emit(kind: str, **fields: object) -> None:
    print(json.dumps({"kind": kind, **fields}), flush=True)


def response_object(items: list[dict[str, object]]) -> dict[str, object]:
    """The final Responses API object of the rollout, checked against NeMo's own model."""
    response = {
        "id": "resp_scripted",
        "created_at": 0,
        "model": "scripted",
        "object": "response",
        "output": items,
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
    }
    NeMoGymResponse.model_validate(response)
    return response


async def play(client: ServerClient, row: dict[str, object]) -> dict[str, object]:
    seeded = await client.post(server_name=SERVER, url_path="/seed_session", json=row)
    assert seeded.status == 200, await seeded.text()
    cookies = seeded.cookies
    history: list[tuple[str, str]] = []
    items: list[dict[str, object]] = []
    outputs = []
    for turn in range(6):
        word = next_guess(history)
        reply = await client.post(server_name=SERVER, url_path="/guess", json={"word": word}, cookies=cookies)
        assert reply.status == 200, await reply.text()
        body = await reply.text()  # NeMo's agent hands the raw body to the model: the observation's text
        outputs.append(body)
        done = reply.headers.get("X-Omnienv-Done") == "true"
        call_id = f"call_{turn}"
        items.append(
            {
                "type": "function_call",
                "call_id": call_id,
                "name": "guess",
                "id": f"fc_{turn}",
                "arguments": json.dumps({"word": word}),
                "status": "completed",
            }
        )
        items.append({"type": "function_call_output", "call_id": call_id, "output": body})
        marks = read_marks(outputs[-1])
        assert marks is not None, outputs[-1]
        history.append(marks)
        if marks[1] == "🟩" * 5:
            assert done, "the winning guess ends the episode"
            break
    verify_body = {**row, "response": response_object(items)}
    verified = await client.post(server_name=SERVER, url_path="/verify", json=verify_body, cookies=cookies)
    assert verified.status == 200, await verified.text()
    reply = await verified.json()
    BaseVerifyResponse.model_validate(reply)  # NeMo's own model accepts our reply
    return {"cookies": cookies, "verify_body": verify_body, "reply": reply, "outputs": outputs, "guesses": len(history)}


async def main() -> None:
    with open(os.environ["OMNIENV_ROWS"]) as file:
        rows = [json.loads(line) for line in file]
    for row in rows:
        BaseRunRequest.model_validate(row)  # NeMo reads our rows as its own
    emit(
        "rows",
        count=len(rows),
        tools=[tool["name"] for tool in rows[0]["responses_create_params"]["tools"]],
        keys=sorted(rows[0]),
    )

    client = ServerClient(
        head_server_config=BaseServerConfig(host="127.0.0.1", port=1), global_config_dict=OmegaConf.create(CONFIG)
    )
    first = await play(client, rows[0])
    reply = first["reply"]
    emit(
        "episode",
        reward=reply["reward"],
        mask_sample=reply["mask_sample"],
        guesses=first["guesses"],
        outputs=first["outputs"],
        echoed=reply["task_id"] == rows[0]["task_id"],
    )

    # No cookie, a forged one, and a closed session: typed errors, nothing else disturbed.
    body = first["verify_body"]
    missing = await client.post(server_name=SERVER, url_path="/verify", json=body)
    forged = await client.post(
        server_name=SERVER,
        url_path="/verify",
        json=body,
        cookies={name: morsel.value[:-3] + "abc" for name, morsel in first["cookies"].items()},
    )
    wrong = await client.post(server_name=SERVER, url_path="/verify", json={"response": []}, cookies=first["cookies"])
    closed = await client.post(server_name=SERVER, url_path="/close_session", json={}, cookies=first["cookies"])
    after = await client.post(server_name=SERVER, url_path="/guess", json={"word": "crane"}, cookies=first["cookies"])
    emit(
        "errors",
        missing=[missing.status, (await missing.json())["code"]],
        forged=[forged.status, (await forged.json())["code"]],
        wrong=[wrong.status, (await wrong.json())["code"]],
        closed=[closed.status, await closed.json()],
        after=[after.status, (await after.json())["code"]],
    )

    second = await play(client, rows[1])
    metrics = await client.post(
        server_name=SERVER, url_path="/aggregate_metrics", json={"verify_responses": [first["reply"], second["reply"]]}
    )
    emit("metrics", status=metrics.status, body=await metrics.json(), second=second["reply"]["reward"])
    await client.post(server_name=SERVER, url_path="/close_session", json={}, cookies=second["cookies"])


if __name__ == "__main__":
    asyncio.run(main())
