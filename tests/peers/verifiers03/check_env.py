"""Run in verifiers 0.3.1's virtualenv: the classic StatefulToolEnv, without a model.

Prints JSON lines. The environment is ``tests.dialects.envs:Counter``: ``add(n)`` with 0.25 per
call, a rubric worth 1 at 3, and a crash on a negative ``n``; ``tests.dialects.envs:Snapshot``
answers with an image. The Jupyter and Desktop datasets are built with their ``setup`` refusing to
run, to show that rows are rendered without a kernel or a display.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import verifiers as vf

from omnienv.envs.desktop import Desktop
from omnienv.envs.jupyter import Jupyter
from omnienv_verifiers import OmniToolEnv

COUNTER = "tests.dialects.envs:Counter"


async def refuse(self: Any, task: Any, rng: Any) -> str:
    raise AssertionError(f"{type(self).__name__}.setup ran to build a dataset row")


def plain(value: Any) -> Any:
    return "nan" if isinstance(value, float) and math.isnan(value) else value


async def play(env: OmniToolEnv, trajectory: str, seed: int, calls: list[dict], end: bool = False) -> dict:
    state = await env.setup_state({"info": {"task_id": "", "seed": seed}, "trajectory_id": trajectory})
    texts = []
    for i, arguments in enumerate(calls):
        message = await env.call_tool("add", env.update_tool_args("add", arguments, [], state), f"call_{i}")
        texts.append(message.content)
    if end:  # verifiers stopped first (its max_turns): its cleanup runs before scoring
        await env.close_episode(state)
    reward = await env.rubric.rubrics[0].funcs[0](state=state)  # ours is the first of the group
    result = {
        "texts": texts,
        "reward": plain(reward),
        "stop": await env.episode_over(state),
        "has_error": await env.has_error(state),
        "error": type(state.get("error")).__name__,
        "omnienv": {k: v for k, v in state["omnienv"].items()},
    }
    await env.close_episode(state)
    return result


async def main() -> None:
    env = vf.load_environment("omnienv-verifiers", env=COUNTER, episodes=2)  # how vf-eval resolves the name
    dataset = env.get_eval_dataset()
    print(
        json.dumps(
            {
                "kind": "env",
                "class": type(env).__name__,
                "rows": len(dataset),
                "question": dataset[0]["prompt"][-1]["content"],
                "tool_defs": {t.name: t.parameters for t in env.tool_defs},
                "functions": [getattr(f, "__name__", "") for f in env.rubric.rubrics[0].funcs],
                "weights": env.rubric.rubrics[0].weights,
            }
        )
    )
    win = await play(env, "t-win", 0, [{"n": 1}, {"n": 2}])
    print(json.dumps({"kind": "win", **win}))
    crash = await play(env, "t-crash", 1, [{"n": -1}, {"n": 1}])
    print(json.dumps({"kind": "crash", **crash, "open_episodes": len(env._episodes)}))
    budget = await play(env, "t-budget", 0, [{"n": 1}], end=True)
    print(json.dumps({"kind": "budget", **budget, "open_episodes": len(env._episodes)}))

    snapshot = vf.load_environment("omnienv-verifiers", env="tests.dialects.envs:Snapshot", episodes=1)
    state = await snapshot.setup_state({"info": {"task_id": "", "seed": 0}, "trajectory_id": "t-image"})
    message = await snapshot.call_tool("look", snapshot.update_tool_args("look", {}, [], state), "call_0")
    parts = [{"type": part["type"], "url": part.get("image_url", {}).get("url", "")[:22]} for part in message.content]
    await snapshot.close_episode(state)
    print(json.dumps({"kind": "image", "parts": parts}))

    Jupyter.setup = refuse  # type: ignore[method-assign]
    Desktop.setup = refuse  # type: ignore[method-assign]
    rows = {
        name: [
            dict(row)
            for row in vf.load_environment("omnienv-verifiers", env=name, split="test", tasks=[task]).get_eval_dataset()
        ]
        for name, task in (("jupyter", "test/sales_total-3"), ("desktop", "test/find-word"))
    }
    print(json.dumps({"kind": "preview", "rows": rows}, default=str))


if __name__ == "__main__":
    asyncio.run(main())
