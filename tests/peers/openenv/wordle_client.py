"""Play Wordle through OpenEnv 0.10.0's own clients; run with the OpenEnv virtualenv's interpreter.

Usage: ``python wordle_client.py URL TASK_ID WRONG_WORD ANSWER SCENARIO...`` where SCENARIO is one of
``generic-sync``, ``generic-dual``, ``generic-async``, ``typed-sync``, ``typed-async``, ``validation``,
``capacity``, ``mcp-tool-client``, ``mcp-tool-client-sync``, ``lifecycle-sync``, ``lifecycle-async``, ``crash``.
Prints one JSON line per scenario: what the client saw, so the calling test asserts on OpenEnv's view
of the server rather than on ours. A scenario that raises prints ``{"error": ...}`` instead and the
script goes on with the next one. ``from_docker_image`` and ``from_env`` are left out: they start a
Docker container or a Hugging Face Space, not a client of a running server.

The typed client (``wordle_typed.py``, beside this script) is written the way an environment author
writes one against OpenEnv's public API, so shape drift that ``GenericEnvClient``'s plain dicts would
tolerate still shows up here.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import traceback
from typing import Any

from openenv.core import GenericAction, GenericEnvClient, MCPToolClient
from openenv.core.env_server import CallToolAction
from wordle_typed import (  # beside this script, on its path
    WordleEnv,
    guess_action,
    list_tools_action,
    prompt_text,
    record,
    state_dict,
    tool_names,
)


def play_sync(env: Any, task_id: str, wrong: str, answer: str, typed: bool) -> dict[str, Any]:
    """One whole game in sync code: reset, list tools, a wrong guess, history, the answer, state."""
    out: dict[str, Any] = {}
    reset = env.reset(task_id=task_id)
    out["prompt"] = reset.observation.prompt if typed else prompt_text(reset.observation)
    out["reset_done"] = reset.done
    out["tools"] = tool_names(env.step(list_tools_action(typed)).observation)
    out["steps"] = [record("wrong", env.step(guess_action(wrong, typed)))]
    history = (
        CallToolAction(tool_name="get_history", arguments={})
        if typed
        else {"type": "call_tool", "tool_name": "get_history", "arguments": {}}
    )
    out["steps"].append(record("history", env.step(history)))
    out["steps"].append(record("answer", env.step(guess_action(answer, typed))))
    out["state"] = state_dict(env.state())
    return out


async def play_async(env: Any, task_id: str, wrong: str, answer: str, typed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    reset = await env.reset(task_id=task_id)
    out["prompt"] = reset.observation.prompt if typed else prompt_text(reset.observation)
    out["reset_done"] = reset.done
    out["tools"] = tool_names((await env.step(list_tools_action(typed))).observation)
    out["steps"] = [record("wrong", await env.step(guess_action(wrong, typed)))]
    history = (
        CallToolAction(tool_name="get_history", arguments={})
        if typed
        else {"type": "call_tool", "tool_name": "get_history", "arguments": {}}
    )
    out["steps"].append(record("history", await env.step(history)))
    out["steps"].append(record("answer", await env.step(guess_action(answer, typed))))
    out["state"] = state_dict(await env.state())
    return out


def generic_sync(url: str, *game: str) -> dict[str, Any]:
    with GenericEnvClient(base_url=url).sync() as env:
        return play_sync(env, *game, typed=False)


def generic_dual(url: str, *game: str) -> dict[str, Any]:
    """0.10.0's dual-mode methods: the async client called from plain sync code."""
    env = GenericEnvClient(base_url=url)
    try:
        return play_sync(env, *game, typed=False)
    finally:
        env.close()


def generic_async(url: str, *game: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with GenericEnvClient(base_url=url) as env:
            return await play_async(env, *game, typed=False)

    return asyncio.run(run())


def typed_sync(url: str, *game: str) -> dict[str, Any]:
    with WordleEnv(base_url=url).sync() as env:
        return play_sync(env, *game, typed=True)


def typed_async(url: str, *game: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with WordleEnv(base_url=url) as env:
            return await play_async(env, *game, typed=True)

    return asyncio.run(run())


def lifecycle_sync(url: str, task_id: str, wrong: str, answer: str) -> dict[str, Any]:
    """The rest of the sync surface: ``EnvClient``'s own ``with``, ``base_url``, ``GenericAction``,
    ``disconnect``/``connect`` (a fresh session), and ``SyncEnvClient``'s ``new_session``/``async_client``."""
    out: dict[str, Any] = {}
    with GenericEnvClient(base_url=url) as env:
        out["base_url"] = env.base_url
        env.reset(task_id=task_id)
        action = GenericAction(type="call_tool", tool_name="guess", arguments={"word": wrong})
        out["first"] = record("wrong", env.step(action))
        out["before"] = state_dict(env.state())
        env.disconnect()
        env.connect()  # a new socket is a new session: the old episode is gone
        env.reset(task_id=task_id)
        out["reconnected"] = record("answer", env.step(guess_action(answer, False)))
        out["after"] = state_dict(env.state())
    with GenericEnvClient(base_url=url).sync() as parent:
        out["async_client"] = type(parent.async_client).__name__
        parent.reset(task_id=task_id)
        child = parent.new_session()
        child.reset(task_id=task_id)
        child.step(guess_action(wrong, False))
        out["parent_win"] = record("answer", parent.step(guess_action(answer, False)))
        out["parent_state"] = state_dict(parent.state())
        out["child_state"] = state_dict(child.state())
    return out


def lifecycle_async(url: str, task_id: str, wrong: str, answer: str) -> dict[str, Any]:
    """The async surface beyond ``async with``: explicit ``connect``/``close``, ``new_session``."""

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        parent = GenericEnvClient(base_url=url)
        await parent.connect()
        try:
            out["base_url"] = parent.base_url
            await parent.reset(task_id=task_id)
            child = await parent.new_session()
            await child.reset(task_id=task_id)
            await child.step(guess_action(wrong, False))
            out["parent_win"] = record("answer", await parent.step(guess_action(answer, False)))
            out["parent_state"] = state_dict(await parent.state())
            out["child_state"] = state_dict(await child.state())
            await parent.disconnect()
            await parent.connect()
            await parent.reset(task_id=task_id)
            out["after_reconnect"] = state_dict(await parent.state())
        finally:
            await parent.close()  # closes the child too
        return out

    return asyncio.run(run())


def mcp_tool_client(url: str, task_id: str, wrong: str, answer: str) -> dict[str, Any]:
    """0.10.0's ``MCPToolClient`` (production mode): tools over ``POST /mcp``, reset/step over ``/ws?session_id=``."""

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with MCPToolClient(base_url=url) as env:
            reset = await env.reset(task_id=task_id)
            out["reset_done"] = reset.done
            out["tools"] = [t.name for t in await env.list_tools()]
            out["fresh_tools"] = [t.name for t in await env.list_tools(use_cache=False)]
            guess = await env.get_tool("guess")
            out["guess_schema"] = guess.input_schema if guess is not None else None
            out["missing_tool"] = await env.get_tool("teleport")
            out["has"] = [await env.has_tool("get_history"), await env.has_tool("teleport")]
            out["first"] = str(await env.call_tool("guess", word=wrong))
            out["history"] = record("history", await env.step(CallToolAction(tool_name="get_history", arguments={})))
            out["last"] = str(await env.call_tool("guess", word=answer))
            out["state"] = state_dict(await env.state())
        return out

    return asyncio.run(run())


def mcp_tool_client_sync(url: str, task_id: str, wrong: str, answer: str) -> dict[str, Any]:
    """``MCPToolClient(...).sync()``: its MCP methods reached through ``SyncEnvClient``'s delegation."""
    out: dict[str, Any] = {}
    with MCPToolClient(base_url=url).sync() as env:
        out["reset_done"] = env.reset(task_id=task_id).done
        out["tools"] = [t.name for t in env.list_tools()]
        out["has"] = [env.has_tool("guess"), env.has_tool("teleport")]
        out["first"] = str(env.call_tool("guess", word=wrong))
        out["last"] = str(env.call_tool("guess", word=answer))
        out["state"] = state_dict(env.state())
    return out


def crash(url: str, task_id: str, wrong: str, answer: str) -> dict[str, Any]:
    """A guess the server cannot run (``wrong`` kills its sandbox): what the generic and the typed client read."""
    out: dict[str, Any] = {}
    with GenericEnvClient(base_url=url).sync() as env:
        env.reset(task_id=task_id)
        result = env.step(guess_action(wrong, False))
        observation = result.observation
        out["generic"] = {
            "reward": result.reward,
            "done": result.done,
            "metadata": result.metadata,
            "observation_metadata": observation.get("metadata"),
            "error": observation.get("error"),
        }
        out["after"] = _server_error(lambda: env.step(guess_action(answer, False)))

    async def typed() -> dict[str, Any]:
        async with MCPToolClient(base_url=url) as env:
            await env.reset(task_id=task_id)
            result = await env.step(CallToolAction(tool_name="guess", arguments={"word": wrong}))
            obs = result.observation
            error = getattr(obs, "error", None)
            return {
                "reward": result.reward,
                "done": result.done,
                "observation_type": type(obs).__name__,
                "metadata": obs.metadata,
                "error_type": error.error_type.value if error is not None else None,
            }

    out["typed"] = asyncio.run(typed())
    return out


def _server_error(call: Any) -> str | None:
    """The message of the ``RuntimeError('Server error: ...')`` OpenEnv's client raises, if any."""
    try:
        call()
    except RuntimeError as exc:
        return str(exc)
    return None


def validation(url: str, task_id: str, wrong: str, answer: str) -> dict[str, Any]:
    """Malformed actions must come back as OpenEnv error frames and leave the session usable."""
    out: dict[str, Any] = {}
    with GenericEnvClient(base_url=url).sync() as env:
        env.reset(task_id=task_id)
        out["missing_tool_name"] = _server_error(lambda: env.step({"type": "call_tool"}))
        out["unknown_action_type"] = _server_error(lambda: env.step({"type": "dance"}))
        out["arguments_not_object"] = _server_error(
            lambda: env.step({"type": "call_tool", "tool_name": "guess", "arguments": "crane"})
        )
        bad_type = env.step({"type": "call_tool", "tool_name": "guess", "arguments": {"word": 12345}})
        out["wrong_argument_type"] = record("wrong_argument_type", bad_type)
        unknown = env.step({"type": "call_tool", "tool_name": "teleport", "arguments": {}})
        out["unknown_tool"] = record("unknown_tool", unknown)
        out["after"] = record("answer", env.step(guess_action(answer, False)))
    return out


def capacity(url: str, task_id: str, wrong: str, answer: str) -> dict[str, Any]:
    """With one slot: the first client plays, a second is refused, and the slot frees on close."""
    out: dict[str, Any] = {}
    first = GenericEnvClient(base_url=url).sync()
    with first:
        first.reset(task_id=task_id)
        second = GenericEnvClient(base_url=url).sync()
        try:
            out["second_refused"] = _server_error(lambda: second.reset(task_id=task_id))
        finally:
            second.close()
        out["first_still_plays"] = record("answer", first.step(guess_action(answer, False)))
    # The slot is released when the first socket closes: poll with a deadline rather than sleep blindly.
    deadline = time.monotonic() + 5.0
    while True:
        third = GenericEnvClient(base_url=url).sync()
        try:
            third_error = _server_error(lambda third=third: third.reset(task_id=task_id))
        finally:
            third.close()
        if third_error is None or "CAPACITY_REACHED" not in third_error or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    out["third_after_close"] = third_error
    return out


SCENARIOS = {
    "generic-sync": generic_sync,
    "generic-dual": generic_dual,
    "generic-async": generic_async,
    "typed-sync": typed_sync,
    "typed-async": typed_async,
    "validation": validation,
    "capacity": capacity,
    "mcp-tool-client": mcp_tool_client,
    "mcp-tool-client-sync": mcp_tool_client_sync,
    "lifecycle-sync": lifecycle_sync,
    "lifecycle-async": lifecycle_async,
    "crash": crash,
}


def main(argv: list[str]) -> None:
    url, task_id, wrong, answer, *names = argv
    for name in names:
        try:
            result = SCENARIOS[name](url, task_id, wrong, answer)
        except Exception as exc:
            tail = traceback.format_exc().splitlines()[-6:]
            result = {"error": f"{type(exc).__name__}: {exc}", "traceback": tail}
        print(json.dumps({"scenario": name, **result}, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
