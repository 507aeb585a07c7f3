"""omnienv's reference environments as Inspect tasks, loaded by name from the command line.

    inspect eval examples/inspect_tasks.py@jupyter -T limit=5 --model openai/gpt-4.1-mini
    inspect eval examples/inspect_tasks.py@desktop -T tasks=test/find-word --model openai/gpt-4.1
    inspect eval examples/inspect_tasks.py@terminal -T split=test --model openai/gpt-4.1-mini

``-T split=...``, ``-T limit=...`` and ``-T tasks=id1,id2`` choose the samples; ``-T env=module:Class``
plays a subclass (the conformance matrix plays its crashing variants that way), and for the
terminal a Harbor task directory or a folder of them (``-T env=path/to/tasks``). Needs
``pip install 'omnienv[jupyter,desktop]' inspect-ai`` (and Xvfb for the desktop, bubblewrap for the
Jupyter kernel's and the terminal's sandboxes).
"""

from __future__ import annotations

from inspect_ai import Task, task

from omnienv.dialects.inspect_eval import environment_task


def _tasks(tasks: str | list[str] | None) -> list[str] | None:
    """``-T tasks=a,b`` arrives as a list, ``-T tasks=a`` as a string."""
    if tasks is None or isinstance(tasks, list):
        return tasks
    return [task_id for task_id in tasks.split(",") if task_id]


@task
def wordle(
    split: str = "test", limit: int | None = None, tasks: str | list[str] | None = None, env: str = "wordle"
) -> Task:
    return environment_task(env, split, limit, tasks=_tasks(tasks))


@task
def jupyter(
    split: str = "test", limit: int | None = None, tasks: str | list[str] | None = None, env: str = "jupyter"
) -> Task:
    return environment_task(env, split, limit, max_turns=20, tasks=_tasks(tasks))


@task
def desktop(
    split: str = "test", limit: int | None = None, tasks: str | list[str] | None = None, env: str = "desktop"
) -> Task:
    return environment_task(env, split, limit, max_turns=30, tasks=_tasks(tasks))


@task
def terminal(
    split: str = "test", limit: int | None = None, tasks: str | list[str] | None = None, env: str = "terminal"
) -> Task:
    return environment_task(env, split, limit, max_turns=50, tasks=_tasks(tasks))
