"""Send environment_factory classes to a spawned process, as AsyncGRPOTrainer does; print JSON lines.

Runs in TRL's virtualenv with a served Wordle's URL as its argument. The classes travel as
``multiprocessing`` pickles them for a spawned child (the way TRL's rollout worker sends its
``environment_factory``); the child plays one guess with each and reports what it saw. The generated
classes are made inside ``main``, so no by-reference lookup could find them: only their recipe can.
"""

from __future__ import annotations

import inspect
import json
import multiprocessing
import pickle
import sys
from typing import Any

from omnienv.dialects.trl import TRLEnvironment, environment_factory

RESERVED = ("reset", "get_reward")  # what TRL does not offer as tools
Base = environment_factory("wordle", name="Plain")


class Loud(Base):  # type: ignore[valid-type,misc]
    """A user's subclass: it must arrive as itself, never as the generated base it extends."""

    def reset(self, **row: Any) -> Any:
        return "LOUD " + str(super().reset(**row))


def play(cls: type[TRLEnvironment], replies: Any) -> None:
    """One episode in the child: the class as it unpickled there, one guess, the reward."""
    env = cls()
    try:
        prompt = env.reset(task_id="test/0000", prompt=[{"role": "user", "content": ""}])
        observation = env.guess(word="crane")  # type: ignore[attr-defined]
        replies.put(
            {
                "class": f"{cls.__module__}.{cls.__qualname__}",
                "bases": [base.__qualname__ for base in cls.__mro__[1:3]],
                "tools": [
                    n for n, _ in inspect.getmembers(cls, inspect.isfunction) if n[0] != "_" and n not in RESERVED
                ],
                "backend": type(env._env).__name__,
                "prompt": str(prompt)[:40],
                "observation": str(observation),
                "reward": env.get_reward(),
            }
        )
    finally:
        env._close()


def in_child(cls: type[TRLEnvironment]) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    replies = context.Queue()
    child = context.Process(target=play, args=(cls, replies))
    child.start()
    try:
        report: dict[str, Any] = replies.get(timeout=120)
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()
            child.join(10)
    return {**report, "exitcode": child.exitcode}


def main() -> None:
    url = sys.argv[1]

    class Local(Base):  # type: ignore[valid-type,misc]
        pass

    for kind, target in (("name", "wordle"), ("url", url)):
        cls = environment_factory(target, name="Wordle")
        blob = pickle.dumps(cls)
        line = {"kind": kind, "recipe": b"_rebuild" in blob, "child": in_child(cls)}
        print(json.dumps(line, ensure_ascii=False), flush=True)
    blob = pickle.dumps(Loud)
    line = {"kind": "subclass", "recipe": b"_rebuild" in blob, "same": pickle.loads(blob) is Loud}
    print(json.dumps({**line, "child": in_child(Loud)}, ensure_ascii=False), flush=True)
    try:
        pickle.dumps(Local)
        error = None
    except (pickle.PicklingError, AttributeError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"kind": "local", "error": error}), flush=True)


if __name__ == "__main__":
    main()
