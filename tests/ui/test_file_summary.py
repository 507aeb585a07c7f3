"""The summary page's numbers, without a browser: void episodes apart, success per split and task,
turns, histograms, a training log's curves, and how the viewer tells a training log from episodes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from omnienv.rollout.run import read_episodes
from omnienv.rollout.summary import summarize
from omnienv.ui.file_summary import (
    histogram,
    moving_average,
    split_of,
    summarize_episodes,
    summarize_training,
    thin,
    turns_histogram,
)
from omnienv.ui.viewer import KEPT_PROBLEMS, TrajectoryIndex
from tests.ui.viewing import HOSTILE_REASON, HOSTILE_TASK, write_eval_file, write_train_log


@pytest.fixture(scope="module")
def eval_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_eval_file(tmp_path_factory.mktemp("summary") / "eval.jsonl")


def test_void_episodes_are_counted_apart_never_averaged(eval_file: Path) -> None:
    records = [orjson.loads(line) for line in eval_file.read_bytes().splitlines()]
    summary = TrajectoryIndex(eval_file)
    summary.refresh()
    numbers = summary.summary()
    scored = [r["reward"] for r in records if not r["failure"]]
    assert (numbers["episodes"], numbers["scored"], numbers["failures"]) == (10, 7, 3)
    assert numbers["mean_reward"] == pytest.approx(sum(scored) / len(scored))
    # the same number `omnienv rollout` prints: failed steps earned 0.75, which must not count as 0 or 0.75
    assert numbers["mean_reward"] == pytest.approx(summarize(read_episodes(eval_file)).mean_reward)
    bars = {round(b["lo"], 4): b["count"] for b in numbers["reward_histogram"]}
    assert bars == {0.1: 3, 1.1667: 3, 1.25: 1}  # seven scored episodes; nothing at 0 or 0.75
    assert numbers["success_rate"] == pytest.approx(4 / 7) and numbers["successes"] == 4
    failed = numbers["failed"]
    assert failed["count"] == 3 and failed["by_kind"] == [{"kind": "sandbox_crashed", "count": 3}]
    assert [(r["message"], r["count"], r["episodes"]) for r in failed["reasons"]] == [
        (HOSTILE_REASON, 2, [7, 8]),
        ("the kernel did not start", 1, [9]),
    ]


def test_success_per_split_and_per_task(eval_file: Path) -> None:
    index = TrajectoryIndex(eval_file)
    index.refresh()
    numbers = index.summary()
    splits = {g["name"]: g for g in numbers["by_split"]}
    assert set(splits) == {"test", "train"}
    assert (splits["test"]["episodes"], splits["test"]["scored"], splits["test"]["failures"]) == (5, 4, 1)
    assert splits["test"]["success_rate"] == 1.0  # the solver won every scored one; the void one is no loss
    assert (splits["train"]["episodes"], splits["train"]["failures"], splits["train"]["success_rate"]) == (5, 2, 0.0)
    tasks = {g["name"]: g for g in numbers["by_task"]}
    assert len(tasks) == 8
    assert tasks["train/0001"]["episodes"] == 2 and tasks["train/0001"]["mean_reward"] == pytest.approx(0.1)
    assert tasks[HOSTILE_TASK]["success_rate"] is None and tasks[HOSTILE_TASK]["mean_reward"] is None


def test_turns_of_scored_episodes_one_bar_per_count(eval_file: Path) -> None:
    index = TrajectoryIndex(eval_file)
    index.refresh()
    numbers = index.summary()
    turns = [s["turns"] for s in index.summaries if not s["failure"]]
    assert numbers["mean_turns"] == pytest.approx(sum(turns) / len(turns))
    bars = numbers["turns_histogram"]
    assert [b["lo"] for b in bars] == list(range(min(turns), max(turns) + 1))  # gaps shown as empty bars
    assert {b["lo"]: b["count"] for b in bars if b["count"]} == {t: turns.count(t) for t in set(turns)}


def test_histograms() -> None:
    values = [i / 10 for i in range(31)]  # 31 distinct values: equal-width bins
    bins = histogram(values, bins=3)
    assert [b["count"] for b in bins] == [10, 10, 11]  # the top edge belongs to the last bin
    assert (bins[0]["lo"], bins[-1]["hi"]) == (0.0, 3.0)
    assert len(histogram(values)) == 6  # about the square root of the count
    assert histogram([0.0, 1.0, 1.0]) == [{"lo": 0.0, "hi": 0.0, "count": 1}, {"lo": 1.0, "hi": 1.0, "count": 2}]
    assert histogram([]) == [] and histogram([2.0] * 4, bins=5) == [{"lo": 2.0, "hi": 2.0, "count": 4}]
    wide = turns_histogram([1, 100, 100])
    assert len(wide) <= 30 and sum(b["count"] for b in wide) == 3 and wide[-1]["hi"] >= 100
    assert split_of({"task_id": "dev/3"}) == "dev" and split_of({"task_id": "x", "split": "eval"}) == "eval"
    assert split_of({"task_id": "plain"}) is None


def test_success_is_unknown_when_no_episode_reports_it() -> None:
    rows: list[dict[str, Any]] = [
        {"index": 0, "reward": 1.0, "success": None, "turns": 2},
        {"index": 1, "reward": 0.0, "turns": 1},
    ]
    numbers = summarize_episodes(rows)
    assert numbers["success_rate"] is None and numbers["mean_reward"] == 0.5
    assert numbers["by_split"] == [
        {"name": None, "episodes": 2, "scored": 2, "failures": 0, "successes": 0, "success_rate": None,
         "mean_reward": 0.5}
    ]  # fmt: skip
    empty = summarize_episodes([])
    assert empty["mean_reward"] is None and empty["reward_histogram"] == [] and empty["failed"]["count"] == 0


def test_training_curves() -> None:
    rows = [
        {"kind": "train_step", "step": 3, "reward": 0.9, "loss": 0.1, "flag": True, "note": "x"},
        {"kind": "train_step", "step": 1, "reward": 0.1, "loss": float("nan"), "grad_norm": 2.0},
        {"kind": "train_step", "step": 2, "reward": 0.5, "loss": 0.3},
        {"kind": "train_step", "step": 4, "reward": None},  # no rollout of the step was scored
    ]
    numbers = summarize_training(rows)
    assert (
        numbers["steps"] == 4
        and numbers["unscored_steps"] == 1
        and (numbers["first_step"], numbers["last_step"]) == (1, 4)
    )
    reward = numbers["reward"]
    assert reward["points"] == [(1.0, 0.1), (2.0, 0.5), (3.0, 0.9)]  # in step order, whatever the line order
    assert (reward["first"], reward["last"], reward["best"]) == (0.1, 0.9, 0.9)
    assert reward["mean"] == pytest.approx(0.5) and reward["window"] == 1
    metrics = {m["name"]: m for m in numbers["metrics"]}
    assert set(metrics) == {"loss", "grad_norm"}  # booleans and strings are no curves
    assert metrics["loss"]["points"] == [(2.0, 0.3), (3.0, 0.1)]  # NaN left out, not drawn as 0
    assert (metrics["loss"]["last"], metrics["loss"]["min"], metrics["loss"]["max"]) == (0.1, 0.1, 0.3)


def test_moving_average_and_thinning() -> None:
    assert moving_average([1.0, 2.0, 3.0, 4.0], 2) == [1.0, 1.5, 2.5, 3.5]
    many = summarize_training([{"kind": "train_step", "step": i, "reward": float(i % 2)} for i in range(1, 2501)])
    reward = many["reward"]
    assert reward["window"] == 50 and reward["last_average"] == pytest.approx(0.5)
    assert reward["every"] == 3 and len(reward["points"]) <= 1001 and reward["points"][-1] == (2500.0, 0.0)
    points = [(float(i), float(i)) for i in range(10)]
    assert thin(points, 4) == ([(0.0, 0.0), (3.0, 3.0), (6.0, 6.0), (9.0, 9.0)], 3)
    assert thin(points, 20) == (points, 1)


def test_the_index_tells_a_training_log_from_episodes(tmp_path: Path, eval_file: Path) -> None:
    log = write_train_log(tmp_path / "train.jsonl", steps=12)
    with log.open("ab") as handle:  # Python's json writes a diverged loss as NaN, which strict JSON refuses
        handle.write(b'{"kind": "train_step", "step": 13, "reward": 0.5, "loss": NaN}\n')
        handle.write(b'{"kind": "config", "model": "tiny"}\n')
    index = TrajectoryIndex(log)
    index.refresh()
    assert index.kind == "training" and len(index.train_steps) == 13 and index.summaries == []
    assert index.problems == ["line 14: a 'config' record, not an episode"]
    numbers = index.summary()
    assert numbers["kind"] == "training" and numbers["last_step"] == 13
    loss = next(m for m in numbers["metrics"] if m["name"] == "loss")
    assert loss["points"][-1][0] == 12.0 and all(math.isfinite(v) for _, v in loss["points"])

    episodes = TrajectoryIndex(eval_file)
    episodes.refresh()
    assert episodes.kind == "trajectories" and episodes.train_steps == []
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(
        eval_file.read_bytes().splitlines(keepends=True)[0] + log.read_bytes().splitlines(keepends=True)[0]
    )
    both = TrajectoryIndex(mixed)
    both.refresh()
    assert both.kind == "trajectories" and len(both.summaries) == 1 and len(both.train_steps) == 1


def test_a_file_of_junk_keeps_the_first_problems_and_counts_the_rest(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"not json\n" * 50_000)
    index = TrajectoryIndex(junk)
    index.refresh()
    assert index.problem_count == 50_000 and len(index.problems) == KEPT_PROBLEMS
    assert index.problems[-1].startswith(f"line {KEPT_PROBLEMS}: ")
