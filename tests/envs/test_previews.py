"""Dataset rows get the prompt without a sandbox, and it is the very prompt a reset shows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from omnienv.core import EnvironmentFailure
from omnienv.dialects._text import prompt_text
from omnienv.dialects.nemo_gym_data import nemo_gym_rows
from omnienv.envs.desktop import Desktop
from omnienv.envs.jupyter import Jupyter
from omnienv.sandboxes.jupyter import KernelPool
from omnienv.sandboxes.xvfb import DisplayPool, DisplaySpec, missing_programs

SEED = 3


@pytest.fixture
def no_sandboxes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting a kernel or a display now fails loudly: what runs here must need neither."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a sandbox was started to render a prompt")

    monkeypatch.setattr("omnienv.sandboxes.jupyter.session.JupyterSandbox.open", refuse)
    monkeypatch.setattr("omnienv.sandboxes.xvfb.pool.DisplayPool.acquire", refuse)


def test_rows_of_sandboxed_environments_start_no_sandbox(no_sandboxes: None) -> None:
    for env in (Jupyter, Desktop):
        split = "test"
        tasks = env.task_index().split(split)
        assert prompt_text(env, tasks[0], SEED)
        rows = list(nemo_gym_rows(env, split, limit=4, seed=SEED))
        assert len(rows) == 4 and all(row["responses_create_params"]["input"][0]["content"] for row in rows)


def test_a_preview_can_fail(no_sandboxes: None) -> None:
    class Blind(Jupyter):  # a prompt only a real reset can tell: rows must start a kernel
        def render_prompt(self, task: object, rng: object) -> None:
            return None

    with pytest.raises(EnvironmentFailure, match="a sandbox was started"):
        prompt_text(Blind, Blind.task_index().split("test")[0], SEED)


@pytest.fixture(scope="module")
def kernels() -> Iterator[KernelPool]:
    pool = KernelPool(1)
    try:
        yield pool
    finally:
        pool.close()


def test_jupyter_previews_are_its_prompts(kernels: KernelPool) -> None:
    env = Jupyter(pool=kernels)

    async def main() -> None:
        try:
            for task in Jupyter.task_index().split("test")[::23]:
                preview = env.preview(task.id, SEED)
                assert preview is not None
                assert (await env.reset(task.id, SEED)).text == preview.text
        finally:
            await env.close()

    asyncio.run(main())


@pytest.mark.skipif(bool(missing_programs(("Xvfb", "bwrap", "openbox", "xterm"))), reason="X programs missing")
def test_desktop_previews_are_its_prompts() -> None:
    pool = DisplayPool(DisplaySpec(), size=1)
    env = Desktop(pool=pool)

    async def main() -> None:
        try:
            for task in Desktop.task_index().split("train")[::7]:
                preview = env.preview(task.id, SEED)
                assert preview is not None
                assert (await env.reset(task.id, SEED)).text == preview.text
        finally:
            await env.close()

    try:
        asyncio.run(main())
    finally:
        pool.close()
