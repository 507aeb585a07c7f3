"""Every shipped terminal task: the oracle solves it through the tools, an idle agent does not, and the
rollout command plays the suite's splits."""

from __future__ import annotations

from omnienv.core import ToolCall
from omnienv.envs.terminal import Terminal
from omnienv.envs.terminal.oracle import HarborOracle
from omnienv.rollout import EpisodePlan, Summary, rollout
from omnienv.rollout.trajectory import Episode

TASKS = [task.id for split in Terminal.splits for task in Terminal.task_index().split(split)]


class Idle:
    """An agent that submits the workspace untouched."""

    name = "idle"

    async def act(self, episode: Episode) -> ToolCall:
        return ToolCall("submit", {})


def play_all(make_policy: type) -> tuple[list[Episode], Summary]:  # type: ignore[type-arg]
    plans = [EpisodePlan(i, task_id, i) for i, task_id in enumerate(TASKS)]
    episodes: list[Episode] = []
    summary = rollout(Terminal, make_policy, plans, concurrency=2, on_episode=episodes.append)
    return sorted(episodes, key=lambda e: e.index), summary


def test_the_oracle_solves_every_task_and_an_idle_agent_none() -> None:
    solved, solved_summary = play_all(HarborOracle)
    assert [(e.task_id, e.reward, e.success) for e in solved if e.reward != 1.0 or e.failure] == []
    idle, idle_summary = play_all(Idle)
    assert [(e.task_id, e.reward) for e in idle if e.reward != 0.0 or e.failure] == []
    assert len(solved) == len(idle) == len(TASKS) >= 40
    assert solved_summary.success_rate == 1.0 and idle_summary.success_rate == 0.0


def test_no_shipped_verifier_lets_the_agents_files_into_its_grader() -> None:
    assert {task.id: task.hazards for task in Terminal.harbor_tasks().values() if task.hazards} == {}
