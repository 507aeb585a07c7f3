"""Doors: the clue decides the reward, so reading it beats chance by the whole gap."""

from __future__ import annotations

from collections import Counter

import pytest

from omnienv.core import ToolCall, check_env, load_environment
from omnienv.envs.doors import CLUES, DOORS, Doors


def _door_the_clue_names(clue: str) -> str:
    return next(door for door, description in CLUES.items() if description in clue)


def test_contract_checks_pass_and_the_name_is_registered() -> None:
    check_env(Doors).raise_for_failures()
    assert load_environment("doors") is Doors


def test_reading_the_clue_wins_every_task() -> None:
    env = Doors()
    for task in Doors.tasks("test"):
        env.reset(task=task)
        clue = env.step(ToolCall("read_clue", {})).observation.text
        assert not any(door in clue for door in DOORS), "the clue must describe the door, not name it"
        result = env.step(ToolCall("open_door", {"door": _door_the_clue_names(clue)}))
        assert result.done and env.episode_reward == 1.0


@pytest.mark.parametrize("door", DOORS)
def test_ignoring_the_clue_wins_one_task_in_four(door: str) -> None:
    env = Doors()
    wins = 0
    for task in Doors.tasks("train"):
        env.reset(task=task)
        wins += env.step(ToolCall("open_door", {"door": door})).done and env.episode_reward == 1.0
    assert wins == len(Doors.tasks("train")) // len(DOORS)


def test_splits_are_balanced_and_a_bad_door_is_the_agents_mistake() -> None:
    assert Counter(task.answer for task in Doors.tasks("test")) == {door: 16 for door in DOORS}
    env = Doors()
    env.reset(task="test/00")
    result = env.step(ToolCall("open_door", {"door": "purple"}))
    assert result.observation.is_error and not result.over
    assert (
        env.preview(task="test/00") is not None and env.preview(task="test/00").text == env.reset(task="test/00").text
    )
