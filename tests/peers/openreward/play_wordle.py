"""openreward 0.1.167's own client plays Wordle on an omnienv server (URL in OMNIENV_URL).

Prints one JSON line per check; tests/peers/test_openreward.py reads them.
"""

from __future__ import annotations

import json
import os

os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"  # no PyPI query at import

from openreward import OpenReward
from openreward.api.environments.types import ToolCallError

from omnienv.envs.wordle.solver import next_guess, read_marks

URL = os.environ["OMNIENV_URL"]


def emit(kind: str, **fields: object) -> None:
    print(json.dumps({"kind": kind, **fields}), flush=True)


def play(session, limit: int = 8) -> dict[str, object]:  # type: ignore[no-untyped-def]
    history: list[tuple[str, str]] = []
    rewards, finished, texts = [], False, []
    for _ in range(limit):
        output = session.call_tool("guess", {"word": next_guess(history)})
        text = output.blocks[0].text
        texts.append(text)
        marks = read_marks(text)
        if marks is not None:
            history.append(marks)
        rewards.append(output.reward)
        finished = output.finished
        if finished:
            break
    return {"rewards": rewards, "finished": finished, "guesses": len(history), "last": texts[-1]}


def main() -> None:
    client = OpenReward(api_key="local", base_url=URL)
    env = client.environments.get("wordle", base_url=URL)  # no variant: the SDK's bare paths
    named = client.environments.get("wordle", variant="wordle", base_url=URL)

    tasks = env.list_tasks("test")
    emit(
        "tasks",
        count=len(tasks),
        first=tasks[0].task_spec,
        env_name=tasks[0].environment_name,
        keys=sorted({key for task in tasks for key in task.task_spec}),
    )
    emit("splits", splits=named.list_splits())
    tools = env.list_tools(format="openai")
    emit("tools", tools=tools, specs=[spec.name for spec in named.list_tools()])

    with env.session(task=tasks[7]) as session:
        prompt = session.get_prompt()
        game = play(session)
        try:
            session.call_tool("guess", {"word": "crane"})
            refused = None
        except ToolCallError as exc:
            refused = {"reason": exc.reason, "detail": str(exc)}
        emit("episode", prompt=prompt[0].text, sid=session.sid, refused=refused, **game)

    with named.session(split="test", index=2) as session:
        try:
            session.call_tool("guess", {"wrd": "crane"})
            bad = None
        except ToolCallError as exc:
            bad = exc.reason
        try:
            session.call_tool("fly", {})
            unknown = None
        except ToolCallError as exc:
            unknown = exc.reason
        game = play(session)
        emit("indexed", bad=bad, unknown=unknown, **game)
    client.close() if hasattr(client, "close") else None


if __name__ == "__main__":
    main()
