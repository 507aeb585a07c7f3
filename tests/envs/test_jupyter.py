"""The Jupyter environment: contract, answer checking, failures, reaping (its tasks: test_jupyter_tasks.py)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import pytest

from omnienv.core import ImageBlock, ToolCall, check_env, load_environment
from omnienv.envs.jupyter import Jupyter, answers_match, jupyter_tasks
from omnienv.envs.jupyter.player import JupyterOracle
from omnienv.rollout import make_policy
from omnienv.sandboxes import jupyter as jupyter_sandbox
from omnienv.sandboxes.jupyter import KernelPool
from tests.busy_executor import default_executor_busy
from tests.server.conftest import serve

__all__ = ["serve"]


@pytest.fixture(scope="module")
def pool() -> Iterator[KernelPool]:
    pool = KernelPool(2)
    try:
        yield pool
    finally:
        pool.close()


def sandbox_processes(base: str) -> list[int]:
    """Pids of the processes inside sandboxes made under ``base``: those in a mount namespace of
    their own that binds a folder from ``base`` (bubblewrap as the namespace's init, and the
    kernel). Their command lines do not name ``base`` (bubblewrap reads its arguments from a
    pipe), and processes in this namespace all see the host's mounts under ``base``."""
    ours = os.readlink("/proc/self/ns/mnt")
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/ns/mnt") == ours:
                continue
            with open(f"/proc/{pid}/mountinfo") as f:
                if any(line.split()[3].startswith(base + "/") for line in f):
                    found.append(int(pid))
        except OSError:
            continue
    return found


# -- tasks and answers -------------------------------------------------------------------------


def test_answers_are_checked_by_value_never_by_substring() -> None:
    assert answers_match("42", 42) and answers_match(" 42.0 ", 42) and answers_match("1,280", 1280)
    assert not answers_match("420", 42) and not answers_match("the answer is 42", 42)
    assert not answers_match("0 1 2 ... 42 43", 42) and not answers_match("", 42)
    big = 2**53 + 1  # a float cannot hold it: compared as floats, the right answer was refused
    assert answers_match(str(big), big) and answers_match(f"{big}.0", big) and not answers_match(str(big - 1), big)
    assert answers_match("3231.6612", 3231.66, 0.005) and not answers_match("3231.67", 3231.66, 0.005)
    assert answers_match("'Durian'.", "durian") and answers_match("pepper  river", "pepper river")
    assert not answers_match("durian, fig", "durian") and not answers_match("nan", 1.0)
    assert answers_match("Fig,durian", "fig, durian") and not answers_match("durian, fig", "fig, durian")
    assert not answers_match("1, 280", 1280)
    assert answers_match("'3.'", 3) and answers_match("`3.` .", "3.") and answers_match("* durian . .", "durian")


@pytest.mark.parametrize("junk", ["a" + ". " * 500_000, "* " * 500_000 + "a", "a" + "." * 1_000_000])
def test_an_answer_of_megabytes_of_junk_is_checked_at_once(junk: str) -> None:
    """The answer is the agent's: trimming its ends one character a pass held the server's
    interpreter for minutes on one final_answer of the largest size a message may have. Counted in
    calls, not in time: one pass makes a few calls whatever the answer's length."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        calls += event in ("call", "c_call")

    previous = sys.getprofile()
    sys.setprofile(count)
    try:
        matched = answers_match(junk, "b") or answers_match(junk, 3)
    finally:
        sys.setprofile(previous)
    assert not matched and calls < 200, calls  # a pass per character made millions


# -- the environment ---------------------------------------------------------------------------


def test_check_env_passes_and_the_name_is_registered() -> None:
    assert load_environment("jupyter") is Jupyter
    report = check_env(Jupyter)
    assert report.ok, report.failures
    jupyter_sandbox.default_pool().close()


def test_an_episode_never_waits_on_the_event_loops_default_executor() -> None:
    """That executor's few threads can all be held by other sessions waiting for a kernel to
    start, or by long work: a kernel wait or a close that queued there would wait for all of it."""
    pool = KernelPool(1)  # its kernel is still starting when the reset asks for it

    async def go() -> None:
        env = Jupyter(pool=pool)
        async with default_executor_busy(), asyncio.timeout(90):
            await env.reset(jupyter_tasks("test")[0].id)
            result = await env.step(ToolCall("execute_shell_command", {"command": "echo ran"}))
            assert result.observation.text.strip() == "ran", result.observation.text
            await env.close()

    try:
        asyncio.run(go())
    finally:
        pool.close()


def test_a_correct_answer_scores_with_a_small_efficiency_term(pool: KernelPool) -> None:
    async def go() -> None:
        env = Jupyter(pool=pool)
        try:
            task = jupyter_tasks("test")[0]
            prompt = await env.reset(task.id)
            assert task.data["question"] in prompt.text and "sales.csv" in prompt.text
            result = await env.step(ToolCall("execute_shell_command", {"command": "head -2 sales.csv"}))
            assert result.observation.text.startswith("date,region,product,units,unit_price\n2024-")
            await env.step(ToolCall("get_notebook_state", {}))
            result = await env.step(ToolCall("final_answer", {"answer": str(task.answer)}))
            assert result.done and result.info["rubric"]["correct"] == 1.0
            assert 1.0 < result.reward < 1.1  # three calls, one more than the fewest
            await env.reset(task.id)
            result = await env.step(ToolCall("final_answer", {"answer": f"{task.answer} or 0"}))
            assert result.done and result.reward == 0.0 and result.info["rubric"] == {"correct": 0.0, "efficiency": 0.0}
            await env.reset(task.id)
            result = await env.step(ToolCall("final_answer", {"answer": str(task.answer)}))  # a guess, no cell
            assert result.info["rubric"] == {"correct": 1.0, "efficiency": 1.0}, result.info
        finally:
            await env.close()

    asyncio.run(go())


def test_tools_show_stderr_errors_images_and_the_notebook(pool: KernelPool) -> None:
    async def go() -> None:
        env = Jupyter(pool=pool, cell_timeout=5)
        try:
            await env.reset("train/fib_mod-0")
            result = await env.step(ToolCall("edit_and_execute_current_cell", {"code": "1"}))
            assert result.observation.is_error and "no code cell" in result.observation.text
            result = await env.step(ToolCall("execute_shell_command", {"command": "ls missing"}))
            assert "[stderr]" in result.observation.text and "exit code 2" in result.observation.text
            result = await env.step(ToolCall("add_and_execute_code_cell", {"code": "1/0"}))
            assert "ERROR: ZeroDivisionError" in result.observation.text and not result.observation.is_error
            env.cell_timeout = 60  # a first matplotlib import builds its font cache: seconds on a busy machine
            result = await env.step(
                ToolCall(
                    "edit_and_execute_current_cell",
                    {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n6 * 7"},
                )
            )
            assert isinstance(result.observation.content[-1], ImageBlock)
            assert "Out[" in result.observation.text and "42" in result.observation.text
            result = await env.step(ToolCall("get_notebook_state", {"include_images": True}))
            text = result.observation.text
            assert "[Cell 1] $ ls missing" in text and "[Cell 2] import matplotlib" in text
            assert "1/0" not in text and "🖼 1 image(s)" in text
            assert isinstance(result.observation.content[-1], ImageBlock)
            state = await env.state()
            assert state.fields == {"cells": 2, "errors": 0, "submitted": False}
            env.cell_timeout = 5
            result = await env.step(ToolCall("add_and_execute_code_cell", {"code": "while True:\n    pass"}))
            assert "time limit" in result.observation.text and result.failure is None
        finally:
            await env.close()

    asyncio.run(go())


def test_a_dead_kernel_voids_the_episode_and_the_next_reset_is_fresh(pool: KernelPool) -> None:
    async def go() -> None:
        env = Jupyter(pool=pool)
        try:
            await env.reset("train/caesar-0")
            await env.step(ToolCall("add_and_execute_code_cell", {"code": "x = 1"}))
            first = env.sandbox
            first.kill_kernel()  # type: ignore[union-attr]
            result = await env.step(ToolCall("add_and_execute_code_cell", {"code": "x"}))
            assert result.failure is not None and "KernelDiedError" in result.failure.message
            assert result.truncated and (await env.state()).truncated
            await env.reset("train/caesar-0")
            assert env.sandbox is not first
            result = await env.step(ToolCall("add_and_execute_code_cell", {"code": "x"}))
            assert result.failure is None and "NameError" in result.observation.text
        finally:
            await env.close()

    asyncio.run(go())


def test_a_kernel_the_agent_kills_ends_the_episode_scored_not_masked(pool: KernelPool) -> None:
    async def go() -> None:
        env = Jupyter(pool=pool)
        try:
            await env.reset("train/caesar-0")
            result = await env.step(ToolCall("add_and_execute_code_cell", {"code": "import os\nos._exit(1)"}))
            assert result.failure is None and result.done and not result.truncated
            assert result.reward == 0.0 and result.info["ended_by_agent"]["reason"] == "kernel_died"
            assert "exit status 1" in result.observation.text
        finally:
            await env.close()

    asyncio.run(go())


def test_the_oracle_is_the_environments_own_player() -> None:
    # tests/envs/test_jupyter_tasks.py plays it on every task through a real kernel
    assert Jupyter.policies == {"oracle": "omnienv.envs.jupyter.player:JupyterOracle"}
    assert make_policy("oracle", Jupyter) is JupyterOracle


def test_a_hundred_episodes_leave_no_kernel_or_bwrap_behind() -> None:
    base = tempfile.mkdtemp(prefix="oj-")
    pool = KernelPool(2, base_dir=base)

    async def go() -> None:
        env = Jupyter(pool=pool)
        try:
            for i in range(100):  # fifty times the pool over: a leak of one a cycle would show
                await env.reset("train/digit_sum_power-0")
                result = await env.step(ToolCall("add_and_execute_code_cell", {"code": "print(1)"}))
                assert result.observation.text == "1", i
                await env.step(ToolCall("final_answer", {"answer": "1"}))
                # each sandbox shows 2 (bwrap as the namespace's init, the kernel): the pool's,
                # the episode's, one starting, one being torn down at most
                running = sandbox_processes(base)
                assert 2 <= len(running) <= 2 * (pool.size + 3), (i, running)
        finally:
            await env.close()

    try:
        asyncio.run(go())
        assert len(os.listdir(base)) <= pool.size + 2  # work dirs are deleted with their kernels
    finally:
        pool.close()
        leftover = sandbox_processes(base)
        shutil.rmtree(base, ignore_errors=True)
    assert leftover == []


def test_bombs_in_one_served_session_leave_the_server_and_other_sessions_alone(serve) -> None:  # type: ignore[no-untyped-def]
    import httpx

    from omnienv.client import WebSocketClient

    url, _ = serve("jupyter")
    bomb, other = WebSocketClient.connect(url), WebSocketClient.connect(url)
    try:
        bomb.reset("train/fib_mod-0")
        other.reset("train/fib_mod-1")
        other.step(ToolCall("add_and_execute_code_cell", {"code": "kept = 5"}))
        fork = bomb.step(ToolCall("add_and_execute_code_cell", {"code": "import os\nwhile True:\n    os.fork()"}))
        assert fork.failure is None, fork  # the agent's doing: an ordinary outcome, never a masked one
        if fork.done:  # the forks used up the sandbox's memory and took the kernel with them, or (on a
            # busy machine) kept it from answering the interrupt before the cell's time limit
            assert fork.info["ended_by_agent"]["reason"] in ("memory_limit", "kernel_died", "time_limit"), fork.info
            bomb.reset("train/fib_mod-0")
        allocate = ToolCall("add_and_execute_code_cell", {"code": "x = bytearray(2**40)"})
        memory = bomb.step(allocate)
        if memory.done:  # the kernel answered the interrupt, then the forks' memory took it (a busy
            # machine's OOM killer can be that late): the agent's doing too, then a fresh episode
            assert memory.failure is None, memory
            assert memory.info["ended_by_agent"]["reason"] in ("memory_limit", "kernel_died"), memory.info
            bomb.reset("train/fib_mod-0")
            memory = bomb.step(allocate)
        assert memory.failure is None and "MemoryError" in memory.observation.text, memory
        assert other.step(ToolCall("add_and_execute_code_cell", {"code": "kept"})).observation.text == "Out[2]: 5"
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
    finally:
        bomb.close()
        other.close()
