"""The summary page's numbers for one file: an eval or rollout's distributions, a training log's curves.

They are computed here, on the server, from what the viewer's index already holds (one small
summary per episode, the training steps), so the page receives a few kilobytes whatever the file's
size and every number can be tested without a browser. The page only draws them.

Failed episodes are void: an infrastructure failure is not a reward of 0. They are counted and
listed apart, with their reasons, and never enter a mean, a histogram or a success rate.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "MAX_TEXT",
    "MAX_TURNS",
    "TRAIN_STEP",
    "histogram",
    "moving_average",
    "number",
    "split_of",
    "summarize_episodes",
    "summarize_training",
    "text",
    "thin",
    "training_row",
    "turns_histogram",
    "whole",
]

TRAIN_STEP = "train_step"
"""The ``kind`` of a training log's lines: ``{"kind": "train_step", "step": 1, "reward": 0.4, ...}``."""
MAX_POINTS = 1000
"""Points per curve sent to the page; longer runs are thinned (every k-th point, the last kept)."""
MAX_METRICS = 60
MAX_REASONS = 50
MAX_EPISODES_PER_REASON = 20
MAX_TEXT = 200
"""Characters kept of a string shown in a list or a summary (a task id, a reason): the file is
hostile, and a summary that copied a field whole would hold and resend the file's bulk."""
MAX_TURNS = 10**6
_NOT_METRICS = frozenset({"kind", "step", "reward"})


def number(value: Any) -> float | None:
    """A finite number, or None (booleans, strings, NaN and infinities are not measurements; an int
    too large for a float is not one either)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def whole(value: Any, most: int = MAX_TURNS) -> int | None:
    """A whole number from 0 to ``most`` (``3`` or ``3.0``), or None: a turn count of 1e300 would
    make a histogram of 10^300 bars and an int no JSON writer takes."""
    value = number(value)
    return int(value) if value is not None and value.is_integer() and 0 <= value <= most else None


def text(value: Any, most: int = MAX_TEXT) -> str | None:
    """A string cut to ``most`` characters (an ellipsis marks the cut) with any lone surrogate (a
    ``"\\ud800"`` escape Python's json accepts) replaced, so it is valid UTF-8 for every JSON
    writer and the browser; None for anything but a string."""
    if not isinstance(value, str):
        return None
    cut = value if len(value) <= most else value[: most - 1] + "…"
    return cut.encode("utf-8", "replace").decode("utf-8")


def histogram(values: Sequence[float], bins: int | None = None, most_distinct: int = 12) -> list[dict[str, Any]]:
    """A bar per value (``lo == hi``) when there are at most ``most_distinct`` different ones (rewards
    are often a few levels: 0 and 1, a win's few scores), else equal-width bins from the smallest
    value to the largest, the last including its upper edge; by default their number grows with
    the square root of the number of values, between 5 and 20."""
    if not values:
        return []
    distinct = Counter(values)
    if len(distinct) <= most_distinct and bins is None:
        return [{"lo": value, "hi": value, "count": distinct[value]} for value in sorted(distinct)]
    low, high = min(values), max(values)
    if low == high:
        return [{"lo": low, "hi": high, "count": len(values)}]
    count = bins or min(20, max(5, math.ceil(math.sqrt(len(values)))))
    width = (high - low) / count
    counts = [0] * count
    for value in values:
        counts[min(count - 1, int((value - low) / width))] += 1
    return [
        {"lo": low + i * width, "hi": high if i == count - 1 else low + (i + 1) * width, "count": n}
        for i, n in enumerate(counts)
    ]


def turns_histogram(turns: Sequence[int], most_bars: int = 30) -> list[dict[str, Any]]:
    """One bar per turn count when they fit (empty counts included, so gaps show), else integer ranges."""
    if not turns:
        return []
    low, high = min(turns), max(turns)
    width = max(1, math.ceil((high - low + 1) / most_bars))
    counts = Counter((turn - low) // width for turn in turns)
    bars = (high - low) // width + 1
    return [{"lo": low + i * width, "hi": low + i * width + width - 1, "count": counts.get(i, 0)} for i in range(bars)]


def split_of(record: dict[str, Any]) -> str | None:
    """The episode's split: a ``split`` field, else the prefix of a task id spelled ``split/name``."""
    split = record.get("split")
    if isinstance(split, str) and split:
        return split
    task = record.get("task_id")
    if isinstance(task, str) and "/" in task:
        return task.split("/", 1)[0]
    return None


def _mean_ci95(rewards: Sequence[float]) -> tuple[float | None, float | None]:
    """The mean and the half-width of its 95% interval (normal approximation, as rollout summaries)."""
    if not rewards:
        return None, None
    mean = sum(rewards) / len(rewards)
    if len(rewards) < 2:
        return mean, None
    variance = sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)
    return mean, 1.96 * math.sqrt(variance / len(rewards))


def _group(name: str | None, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts for a set of episodes; success rate and mean reward over the scored ones only."""
    scored = [row for row in rows if not row.get("failure")]
    rewards = [r for row in scored if (r := number(row.get("reward"))) is not None]
    judged = any(isinstance(row.get("success"), bool) for row in scored)
    successes = sum(row.get("success") is True for row in scored)
    return {
        "name": name,
        "episodes": len(rows),
        "scored": len(scored),
        "failures": len(rows) - len(scored),
        "successes": successes,
        "success_rate": successes / len(scored) if judged and scored else None,
        "mean_reward": sum(rewards) / len(rewards) if rewards else None,
    }


def _grouped(rows: Iterable[dict[str, Any]], key: Any) -> list[dict[str, Any]]:
    groups: dict[str | None, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    ordered = sorted(groups.items(), key=lambda item: (item[0] is None, str(item[0])))
    return [_group(name, members) for name, members in ordered]


def _failures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Failed episodes by kind, and by reason (kind and message) with the episodes that had it."""
    reasons: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        failure = row.get("failure")
        if not failure:
            continue
        kind = (text(failure.get("kind")) if isinstance(failure, dict) else None) or "?"
        message = (text(failure.get("message")) if isinstance(failure, dict) else text(failure)) or ""
        reasons.setdefault((kind, message), []).append(int(row.get("index", -1)))
    kinds: Counter[str] = Counter()
    for (kind, _), episodes in reasons.items():
        kinds[kind] += len(episodes)
    listed = sorted(reasons.items(), key=lambda item: (-len(item[1]), item[0]))
    return {
        "count": sum(kinds.values()),
        "by_kind": [{"kind": kind, "count": n} for kind, n in kinds.most_common()],
        "reasons": [
            {"kind": kind, "message": message, "count": len(episodes), "episodes": episodes[:MAX_EPISODES_PER_REASON]}
            for (kind, message), episodes in listed[:MAX_REASONS]
        ],
        "more_reasons": max(0, len(listed) - MAX_REASONS),
    }


def summarize_episodes(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """An eval or rollout file: totals, reward and turn distributions, success per split and per
    task, and the failures apart. ``rows`` are the viewer's episode summaries (``summarize_record``)."""
    scored = [row for row in rows if not row.get("failure")]
    rewards = [r for row in scored if (r := number(row.get("reward"))) is not None]
    turns = [t for row in scored if (t := whole(row.get("turns"))) is not None]
    mean, ci95 = _mean_ci95(rewards)
    overall = _group(None, rows)
    return {
        "kind": "trajectories",
        "episodes": len(rows),
        "scored": len(scored),
        "failures": len(rows) - len(scored),
        "mean_reward": mean,
        "reward_ci95": ci95,
        "success_rate": overall["success_rate"],
        "successes": overall["successes"],
        "mean_turns": sum(turns) / len(turns) if turns else None,
        "truncated": sum(row.get("truncated") is True for row in scored),
        "stopped": sum(bool(row.get("stopped")) for row in scored),
        "reward_histogram": histogram(rewards),
        "turns_histogram": turns_histogram(turns),
        "by_split": _grouped(rows, split_of),
        "by_task": _grouped(rows, lambda row: row.get("task_id") if isinstance(row.get("task_id"), str) else None),
        "failed": _failures(rows),
    }


def moving_average(values: Sequence[float], window: int) -> list[float]:
    """The trailing mean of the last ``window`` values at each point (fewer at the start)."""
    out: list[float] = []
    total = 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def thin(points: Sequence[tuple[float, float]], most: int = MAX_POINTS) -> tuple[list[tuple[float, float]], int]:
    """Every k-th point (the last always kept) so a curve has at most ``most``; returns the points and k."""
    every = max(1, math.ceil(len(points) / most))
    kept = list(points[::every])
    if every > 1 and kept[-1] != points[-1]:
        kept.append(points[-1])
    return kept, every


def training_row(record: dict[str, Any], most: int = 4 * MAX_METRICS) -> dict[str, float | int]:
    """What the summary keeps of a training log's line: its numeric fields (at most ``most``), names
    cut and cleaned as ``text`` does; the rest (a model name, a hostile megabyte) is never drawn,
    so it is not held either."""
    row: dict[str, float | int] = {}
    for key, value in record.items():
        if len(row) >= most:
            break
        measured = number(value)
        if measured is not None and (name := text(key)) is not None:
            row[name] = value if isinstance(value, int) and abs(value) < 2**53 else measured
    return row


def summarize_training(steps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A training log: the reward per step with its moving average, and every other numeric metric
    as its own curve (TRL's names kept verbatim), in the order they first appear."""
    ordered = sorted((row for row in steps if number(row.get("step")) is not None), key=lambda row: float(row["step"]))
    rewards = [(float(row["step"]), r) for row in ordered if (r := number(row.get("reward"))) is not None]
    values = [r for _, r in rewards]
    window = max(1, min(50, len(values) // 10))
    averages = moving_average(values, window)
    points, every = thin(rewards)
    average_points, _ = thin([(step, m) for (step, _), m in zip(rewards, averages, strict=True)])
    names: dict[str, None] = {}
    for row in ordered:
        for key, value in row.items():
            if key not in _NOT_METRICS and number(value) is not None and len(names) < MAX_METRICS:
                names.setdefault(key)
    metrics = []
    for name in names:
        series = [(float(row["step"]), v) for row in ordered if (v := number(row.get(name))) is not None]
        curve, metric_every = thin(series)
        metrics.append(
            {
                "name": name,
                "points": curve,
                "every": metric_every,
                "last": series[-1][1],
                "min": min(v for _, v in series),
                "max": max(v for _, v in series),
            }
        )
    return {
        "kind": "training",
        "steps": len(ordered),
        "unscored_steps": len(ordered) - len(values),  # every rollout of the step failed: no reward, no point
        "first_step": ordered[0]["step"] if ordered else None,
        "last_step": ordered[-1]["step"] if ordered else None,
        "reward": {
            "points": points,
            "moving_average": average_points,
            "window": window,
            "every": every,
            "first": values[0] if values else None,
            "last": values[-1] if values else None,
            "best": max(values) if values else None,
            "mean": sum(values) / len(values) if values else None,
            "last_average": averages[-1] if averages else None,
        },
        "metrics": metrics,
    }
