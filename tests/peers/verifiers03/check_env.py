"""Run in verifiers 0.3.1's virtualenv: the classic StatefulToolEnv, without a model.

Prints JSON lines. The environment is ``tests.dialects.envs:Counter``: ``add(n)`` with 0.25 per
call, a rubric worth 1 at 3, and a crash on a negative ``n``.
"""

from __future__ import annotations

import asyncio
import json

import verifiers as vf

from omnienv_verifiers import OmniToolEnv

COUNTER = "tests.dialects.envs:Counter"


async def play(env: OmniToolEnv, trajectory: str, seed: int, calls: list[dict]) -> dict:
    state = await env.setup_state({"info": {"task_id": "", "seed": seed}, "trajectory_id": trajectory})
    texts = []
    for i, arguments in enumerate(calls):
        message = await env.call_tool("add", env.update_tool_args("add", arguments, [], state), f"call_{i}")
        texts.append(message.content)
    reward = await env.rubric.rubrics[0].funcs[0](state=state)  # ours is the first of the group
    result = {
        "texts": texts,
        "reward": reward,
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


if __name__ == "__main__":
    asyncio.run(main())
