"""Acceptance: for every archetype, `make test` passes inside the package exactly as generated.

The package is not installed (installing it would leak into the main virtualenv): its Makefile
runs pytest with this interpreter, and pytest puts the package root on the path. The entry point
is proven through the same ``package.env:Class`` target it declares (test_templates.py).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from omnienv.core import ImageBlock, as_async, check_env, load_environment
from omnienv.rollout import arun_episode, make_policy
from omnienv.rollout.loop import EpisodePlan
from omnienv.scaffold import ARCHETYPES, CreatedEnvironment

NAMES = {
    "single-turn": "quick-sum",
    "multi-turn-tools": "code-breaker",
    "sandboxed-code": "solve-it",
    "vision": "count-squares",
}


@pytest.mark.parametrize("archetype", ARCHETYPES)
def test_make_test_passes_as_generated(archetype: str, generated: Callable[[str, str], CreatedEnvironment]) -> None:
    created = generated(NAMES[archetype], archetype)
    env = {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    result = subprocess.run(
        ["make", "test", f"PYTHON={sys.executable}"],
        cwd=created.root,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )  # a make of its own, even when run from `make test`
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert " passed" in output and "failed" not in output
    assert "all checks passed" in output


@pytest.mark.parametrize("archetype", ARCHETYPES)
def test_contract_checks_pass_in_process_and_the_scripted_policy_wins(
    archetype: str, generated: Callable[[str, str], CreatedEnvironment], importable: Callable[..., None]
) -> None:
    created = generated(NAMES[archetype], archetype)
    importable(created)
    cls = load_environment(created.target)
    assert cls.name == created.names.name
    report = check_env(cls)
    assert report.ok, [(r.name, r.message) for r in report.failures]
    policy = make_policy(f"{created.names.package}.policy:ScriptedPolicy", cls)()
    task = cls.tasks("test")[0]

    async def play():  # type: ignore[no-untyped-def]
        env = as_async(cls())
        try:
            return await arun_episode(env, policy, EpisodePlan(0, task.id, 0))
        finally:
            await env.close()

    episode = asyncio.run(play())
    assert episode.failure is None and episode.success is True and episode.reward >= 1.0
    if archetype == "vision":
        assert episode.prompt is not None
        assert any(isinstance(block, ImageBlock) for block in episode.prompt.content)


def test_a_policy_by_import_path_that_does_not_load_is_a_clear_error() -> None:
    from omnienv.envs.echo import Echo

    with pytest.raises(ValueError, match=r"cannot load policy 'no_such_package\.policy:ScriptedPolicy'"):
        make_policy("no_such_package.policy:ScriptedPolicy", Echo)
