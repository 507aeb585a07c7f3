"""Calls sent to threads never wait for other calls that wait (``omnienv.core.threads``)."""

from __future__ import annotations

import asyncio
import contextvars
import threading

from omnienv.core.threads import to_blocking_thread
from tests.busy_executor import default_executor_busy

WAITING = 40
"""More than the loop's default executor has threads on any machine (at most 32)."""


def test_a_short_call_answers_while_many_calls_wait_and_the_default_executor_is_busy() -> None:
    async def go() -> None:
        release = threading.Event()
        async with default_executor_busy():
            waiting = [asyncio.ensure_future(to_blocking_thread(release.wait, 60)) for _ in range(WAITING)]
            try:
                assert await asyncio.wait_for(to_blocking_thread(lambda: "answered"), 10) == "answered"
                assert not any(call.done() for call in waiting)
            finally:
                release.set()
                assert await asyncio.wait_for(asyncio.gather(*waiting), 10) == [True] * WAITING

    asyncio.run(go())


def test_the_call_sees_the_callers_context_variables_and_keyword_arguments() -> None:
    request: contextvars.ContextVar[str] = contextvars.ContextVar("request")

    def read(prefix: str, *, suffix: str) -> str:
        return prefix + request.get() + suffix

    async def go() -> str:
        request.set("r-7")
        return await to_blocking_thread(read, "<", suffix=">")

    assert asyncio.run(go()) == "<r-7>"


def test_no_module_sends_work_to_the_loops_default_executor() -> None:
    """``asyncio.to_thread`` and ``run_in_executor(None, ...)`` use the loop's default executor."""
    import ast
    from pathlib import Path

    import omnienv

    found = []
    for path in Path(omnienv.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            default = node.func.attr == "run_in_executor" and (
                not node.args or (isinstance(node.args[0], ast.Constant) and node.args[0].value is None)
            )
            if node.func.attr == "to_thread" or default:
                found.append(f"{path}:{node.lineno}")
    assert found == [], f"use omnienv.core.threads.to_blocking_thread instead: {found}"
