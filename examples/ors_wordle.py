"""Wordle over ORS: omnienv serves it, the ``openreward`` SDK's own client plays it to a win.

    .venvs/openreward/bin/python examples/ors_wordle.py                          # serves, then plays
    .venvs/openreward/bin/python examples/ors_wordle.py --url http://127.0.0.1:8000   # `omnienv serve wordle`

(openreward pins sse-starlette, so it lives in its own virtualenv: tests/peers/openreward.)
The SDK finds the environment by name; ``variant=`` makes it use the ``/wordle/...`` routes.
"""

from __future__ import annotations

import argparse
import os
from contextlib import ExitStack

os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")  # no PyPI query at import

from openreward import OpenReward

from omnienv.envs.wordle.solver import next_guess, read_marks


def play(url: str, episodes: int) -> None:
    client = OpenReward(api_key="local", base_url=url)
    env = client.environments.get("wordle", variant="wordle", base_url=url)
    print(f"splits {env.list_splits()}, tools {[tool['name'] for tool in env.list_tools(format='openai')]}")
    for task in env.list_tasks("test")[:episodes]:  # task specs carry the id, never the answer
        with env.session(task=task) as session:
            history: list[tuple[str, str]] = []
            finished = False
            while not finished:
                output = session.call_tool("guess", {"word": next_guess(history)})
                text = output.blocks[0].text
                if marks := read_marks(text):
                    history.append(marks)
                finished = output.finished
            print(f"{task.task_spec['id']}: {text} reward {output.reward:.3f}")


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
        play(url, args.episodes)


if __name__ == "__main__":
    main()
