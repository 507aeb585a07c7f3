"""The ORS cells, in openreward's virtualenv: its own client plays every matrix environment.

``OMNIENV_URLS`` maps each environment to our server serving it (started by
:mod:`tests.matrix.frameworks.ors`). For each one the SDK finds the task in ``list_tasks``,
opens a session on it, and the environment's scripted player plays it from the text blocks
the SDK returns; per-step rewards and ``finished`` are ORS's own. A second session makes the
crash call: ORS voids it with ``reward: null`` and ``finished: true``. One report line per env.
"""

from __future__ import annotations

import sys
from os.path import abspath, dirname

# Run as a script, this folder would come first on sys.path and its modules (named after the
# frameworks) would shadow packages; the repository root goes there instead, for tests.matrix.
sys.path[0] = dirname(dirname(dirname(dirname(abspath(__file__)))))

import base64  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
from typing import Any  # noqa: E402

os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"  # no PyPI query at import

from openreward import OpenReward  # noqa: E402
from openreward.api.environments.types import ImageBlock, TextBlock  # noqa: E402
from openreward.api.errors import ToolFailed  # noqa: E402

from tests.matrix.cells import CELLS, Player, cell_report, crash_report, image_report, print_report  # noqa: E402


def read(blocks: list[Any], images: list[dict[str, Any]]) -> str:
    """The text the model reads; each image block is reported as an image, never as text."""
    for block in blocks:
        if isinstance(block, ImageBlock):
            images.append(image_report("ORS image block", base64.b64decode(block.data)))
    return "\n".join(block.text for block in blocks if isinstance(block, TextBlock))


def play(env_name: str, url: str) -> dict[str, Any]:
    cell = CELLS[env_name]
    client = OpenReward(api_key="local", base_url=url)
    env = client.environments.get(env_name, variant=env_name, base_url=url)
    split = cell.task_id.split("/", 1)[0]
    (task,) = [task for task in env.list_tasks(split) if task.task_spec["id"] == cell.task_id]
    seen: list[Any] = [task.task_spec, env.list_tools(format="openai")]
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    rewards: list[float] = []
    metadata: dict[str, Any] = {}
    with env.session(task=task) as session:
        prompt = read(session.get_prompt(), images)
        seen.append(prompt)
        player = Player(cell, prompt)
        finished = False
        while not finished:
            call = player.act()
            output = session.call_tool(call.name, dict(call.arguments))
            metadata = output.metadata or {}
            seen.append(metadata)
            text = read(output.blocks, images)
            texts.append(text)
            rewards.append(output.reward)
            finished = output.finished
            player.saw(call, text)
    with env.session(task=task) as session:
        try:
            crashed = session.call_tool(cell.crash.name, dict(cell.crash.arguments))
            crash = crash_report(crashed.reward, "reward=None", crashed.reward is None and crashed.finished)
            seen.append(crashed.metadata)
        except ToolFailed as exc:  # no reward either, but not the answer our server gives: fail the cell
            crash = crash_report(None, f"ToolFailed instead of reward=None + finished: {exc}", False)
    client.close() if hasattr(client, "close") else None
    return cell_report(
        env_name,
        rewards=rewards,
        total=sum(rewards),
        done=bool(metadata.get("done")),
        crash=crash,
        seen=seen,
        texts=texts,
        images=images,
    )


def main() -> None:
    for env_name, url in json.loads(os.environ["OMNIENV_URLS"]).items():
        print_report(play(env_name, url))


if __name__ == "__main__":
    main()
