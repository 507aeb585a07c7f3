"""Checks of the in-process OpenEnv importer, run inside OpenEnv 0.10.0's own virtualenv.

``python tests/catalog/openenv_checks.py`` prints JSON lines that tests/peers/test_catalog_openenv.py
reads: the OpenEnv environments of ``openenv_envs.py`` loaded as ``openenv/<module>:<Class>``
through the contract checker, their tools, scripted episodes, a raising environment, one episode
over ``/ws`` from omnienv's server with omnienv's client, and one through omnienv's TRL dialect
(``environment_factory``, an in-process dialect that needs no TRL: this virtualenv has only OpenEnv).
omnienv is not installed in this virtualenv, so the repository root goes on the path.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from omnienv.core import ToolCall, check_env, load_environment

MODULE = "tests.catalog.openenv_envs"
ECHO, GUESS, BROKEN = (f"openenv/{MODULE}:{name}" for name in ("EchoGame", "GuessNumber", "Broken"))


def emit(kind: str, **fields: Any) -> None:
    print(json.dumps({"kind": kind, **fields}), flush=True)


def bisect(step: Any, limit: int = 8) -> tuple[float, bool, int]:
    """Find GuessNumber's number by its hints: the total reward, whether it ended, the guesses."""
    low, high, total = 1, 20, 0.0
    for count in range(1, limit + 1):
        guess = (low + high) // 2
        text, reward, done = step(guess)
        total += reward
        if done:
            return total, True, count
        if "higher" in text:
            low = guess + 1
        elif "lower" in text:
            high = guess - 1
    return total, False, limit


def checks() -> None:
    for name in (ECHO, GUESS):
        report = check_env(load_environment(name))
        emit("check", name=name, ok=report.ok, failures=[f"{r.name}: {r.message}" for r in report.failures])
    for name in (ECHO, GUESS):
        cls = load_environment(name)
        emit(
            "tools", name=name, tools={n: {"description": s.description, **s.parameters} for n, s in cls.tools.items()}
        )


def episodes() -> None:
    echo = load_environment(ECHO)()
    prompt = echo.reset(task="test/00003").text
    word = re.search(r"'(\w+)'", prompt).group(1)  # type: ignore[union-attr]
    wrong = echo.step(ToolCall("echo", {"message": "not it"}))
    bad = echo.step(ToolCall("shout", {"message": "hi", "times": 0}))  # the tool raises: the agent's mistake
    schema = echo.step(ToolCall("shout", {"message": "hi", "times": "many"}))
    loud = echo.step(ToolCall("shout", {"message": "hi"}))  # the optional argument left out
    won = echo.step(ToolCall("echo", {"message": word}))
    emit(
        "echo",
        prompt=prompt,
        wrong=[wrong.observation.text, wrong.reward, wrong.done],
        bad=[bad.observation.is_error, bad.observation.text, bad.failure is None, bad.done],
        schema=[schema.observation.is_error, schema.observation.text, schema.failure is None],
        loud=loud.observation.text,
        won=[won.observation.text, won.reward, won.done, echo.episode_reward],
    )
    echo.close()

    guess = load_environment(GUESS)()
    prompt = guess.reset(task="test/00003").text
    out_of_range = guess.step(ToolCall("act", {"guess": 25}))

    def step(number: int) -> tuple[str, float, bool]:
        result = guess.step(ToolCall("act", {"guess": number}))
        return result.observation.text, result.reward, result.done

    total, done, count = bisect(step)
    emit(
        "guess",
        prompt=prompt,
        out_of_range=[out_of_range.observation.is_error, out_of_range.observation.text, out_of_range.failure is None],
        reward=total,
        done=done,
        steps=guess.state().step_count,
        guesses=count,
    )
    guess.close()


def broken() -> None:
    env = load_environment(BROKEN)()
    env.reset(seed=1)
    result = env.step(ToolCall("act", {"move": "x"}))
    failure = result.failure
    again = env.reset(seed=2).text  # the same instance plays on
    emit(
        "broken",
        failure=failure.kind if failure else None,
        message=failure.message if failure else "",
        reward=result.reward,
        over=result.over,
        again=again,
    )


def over_ws() -> None:
    from omnienv.app import create_app
    from omnienv.client import WebSocketClient
    from omnienv.server import running

    with running(create_app(GUESS, plugins=[])) as url, WebSocketClient(url) as env:
        prompt = env.reset(task="test/00005").text

        def step(number: int) -> tuple[str, float, bool]:
            result = env.step(ToolCall("act", {"guess": number}))
            return result.observation.text, result.reward, result.done

        total, done, _ = bisect(step)
        emit("ws", name=GUESS, prompt=prompt, tools=sorted(env.tools), reward=total, done=done)
    with running(create_app(BROKEN, plugins=[])) as url, WebSocketClient(url) as env:
        env.reset(seed=1)
        result = env.step(ToolCall("act", {"move": "x"}))
        again = env.reset(seed=2).text  # the server survived and serves the session on
        emit("ws_broken", failure=result.failure.kind if result.failure else None, again=again)


def in_dialect() -> None:
    from omnienv.dialects.trl import environment_factory

    factory = environment_factory(ECHO)
    env = factory()
    prompt = env.reset(seed=9)
    text = prompt if isinstance(prompt, str) else json.dumps(prompt)
    word = re.search(r"'(\w+)'", text).group(1)  # type: ignore[union-attr]
    first = env.shout(message="hey", times=2)
    env.echo(message=word)
    emit(
        "dialect",
        api="trl",
        tools=sorted(n for n in vars(factory) if not n.startswith("_")),
        shout=first,
        reward=env.get_reward(),
    )


def main() -> None:
    checks()
    episodes()
    broken()
    over_ws()
    in_dialect()


if __name__ == "__main__":
    main()
