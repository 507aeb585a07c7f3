"""NeMo Gym datasets from any environment: one JSONL row per task, prompt and tools included.

Row ``i`` carries its task id and seed, so ``/seed_session`` (:mod:`omnienv.dialects.nemo_gym`)
starts exactly the episode whose prompt the row shows; rows never carry the answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from omnienv.core.adapters import as_sync
from omnienv.core.content import Block, ImageBlock, TextBlock
from omnienv.core.env import AsyncEnvironment, Environment, EnvironmentBase
from omnienv.core.tasks import Task

__all__ = ["input_content", "nemo_gym_rows", "nemo_gym_task_rows", "nemo_gym_tools"]


def nemo_gym_tools(env_class: type[EnvironmentBase]) -> list[dict[str, Any]]:
    """The tools as Responses-API function tools (``responses_create_params.tools``)."""
    return [
        {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
            "strict": False,
        }
        for spec in env_class.tools.values()
    ]


def input_content(blocks: Sequence[Block]) -> str | list[dict[str, Any]]:
    """Blocks as Responses API input: the text when it is all text, else ``input_text`` and
    ``input_image`` parts (images as data URLs). Prompts in the rows and tool outputs for
    ``gymnasium_agent`` both take this shape."""
    if all(isinstance(block, TextBlock) for block in blocks):
        return "\n".join(block.text for block in blocks if isinstance(block, TextBlock))
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append({"type": "input_image", "image_url": block.data_url, "detail": "auto"})
    return parts


def _prompts(env_class: type[EnvironmentBase], tasks: Sequence[Task], seeds: Sequence[int]) -> list[Sequence[Block]]:
    """What ``reset`` shows for each task and seed, from one instance reset once per task."""
    if not issubclass(env_class, Environment | AsyncEnvironment):
        raise TypeError(f"expected an environment class, got {env_class!r}")
    instance = env_class()
    previews = [instance.preview(task, seed) for task, seed in zip(tasks, seeds, strict=True)]
    if all(preview is not None for preview in previews):  # no sandbox needed to render the rows
        return [preview.content for preview in previews if preview is not None]
    env = as_sync(instance)
    try:
        return [env.reset(task, seed).content for task, seed in zip(tasks, seeds, strict=True)]
    finally:
        env.close()


def nemo_gym_rows(
    env_class: type[EnvironmentBase], split: str, limit: int | None = None, *, seed: int = 0
) -> Iterator[dict[str, Any]]:
    """One NeMo Gym dataset row per task of ``split``: the prompt, the tools, the task id and seed.

    Row ``i`` has seed ``seed + i``; its prompt is what ``reset`` shows for that task and seed, and
    ``/seed_session`` starts that very episode from the row. Rows never carry the answer.
    """
    return _rows(env_class, env_class.task_index().page(split, 0, limit), seed)


def nemo_gym_task_rows(
    env_class: type[EnvironmentBase], task_ids: Sequence[str], *, seed: int = 0
) -> Iterator[dict[str, Any]]:
    """The rows of the tasks ``task_ids`` (ids like ``"test/0000"``), seeds numbered as in :func:`nemo_gym_rows`."""
    index = env_class.task_index()
    return _rows(env_class, [index.find(task_id) for task_id in task_ids], seed)


def _rows(env_class: type[EnvironmentBase], tasks: Sequence[Task], seed: int) -> Iterator[dict[str, Any]]:
    seeds = [seed + i for i in range(len(tasks))]
    tools = nemo_gym_tools(env_class)
    for task, episode_seed, prompt in zip(tasks, seeds, _prompts(env_class, tasks, seeds), strict=True):
        yield {
            "responses_create_params": {
                "input": [{"role": "user", "content": input_content(prompt)}],
                "tools": tools,
            },
            "env": env_class.name,
            "task_id": task.id,
            "split": task.split,
            "seed": episode_seed,
        }
