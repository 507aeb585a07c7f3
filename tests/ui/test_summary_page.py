"""The summary page in a real browser (Debian's Chromium through Playwright): an eval file's
charts and tables, a training log's curves through `omnienv view`, and markup from a hostile file
shown as text, never run. Screenshots are kept to look at (tests/ui/shots.py says where)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from omnienv.server import running
from omnienv.ui.viewer import create_viewer_app
from tests.ui.shots import shots_dir
from tests.ui.viewing import (
    HOSTILE_METRIC,
    HOSTILE_REASON,
    HOSTILE_TASK,
    omnienv_view,
    train_rows,
    write_eval_file,
    write_train_log,
)

BOX = "node => { const b = node.getBoundingClientRect(); return [b.width, b.height]; }"
NOTHING_RAN = "() => [window.pwned, document.querySelectorAll('#summary script, #summary img').length]"


def reward_text(value: float) -> str:
    """The page's formatReward: four decimals at most, one for whole numbers."""
    return f"{value:.1f}" if float(value).is_integer() else str(round(value, 4))


def bars(page: Any, card: str) -> list[tuple[int, float, float]]:
    return [
        (int(bar.get_attribute("data-count")), *bar.evaluate(BOX))
        for bar in page.query_selector_all(f"{card} svg.chart rect.bar")
    ]


@pytest.fixture(scope="module")
def eval_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_eval_file(tmp_path_factory.mktemp("page") / "eval.jsonl")


def test_eval_summary_page(page: Any, eval_file: Path) -> None:
    records = [orjson.loads(line) for line in eval_file.read_bytes().splitlines()]
    scored = [r for r in records if not r["failure"]]
    mean = sum(r["reward"] for r in scored) / len(scored)
    with running(create_viewer_app(eval_file)) as url:
        page.goto(url)  # the episode list, with a tab to the summary
        page.wait_for_selector("#episodes tbody tr")
        page.click("#tab-summary")
        page.wait_for_selector("#summary[data-kind=trajectories]")
        assert page.url.endswith("/ui/summary.html?source=server")
        assert page.text_content("#file-name") == "eval.jsonl"

        shown_mean = page.text_content("#stat-mean .value")
        assert shown_mean.split(" ± ")[0] == reward_text(mean)  # failed episodes' 0.75 and 0.0 left out
        assert page.text_content("#stat-failures .value") == "3"
        assert page.text_content("#stat-success .value") == f"{100 * 4 / 7:.1f}%"

        rewards = bars(page, "#rewards")
        assert sorted(count for count, _, _ in rewards) == [1, 3, 3]  # 0.1, 1.17, 1.25: the scored seven
        assert all(width > 0 and height > 0 for _, width, height in rewards)
        assert page.is_visible("#rewards svg.chart")
        turns = bars(page, "#turns")
        assert sum(count for count, _, _ in turns) == len(scored)
        assert max(height for _, _, height in turns) > 0 and all(width > 0 for _, width, _ in turns)

        splits = page.eval_on_selector_all(
            "#by-split tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent.trim()))"
        )
        assert splits == [
            ["test", "5", "100.0%", reward_text(sum(r["reward"] for r in scored[:4]) / 4), "1"],
            ["train", "5", "0.0%", "0.1", "2"],
        ]
        assert page.eval_on_selector_all("#by-task tbody tr", "rows => rows.length") == 8

        # the failures, apart, with their reasons; markup from the file shown as text, never run
        assert page.text_content("#failure-count").startswith("3 of 10 episode(s) failed")
        reasons = page.eval_on_selector_all(
            "#failure-reasons tbody tr td pre", "cells => cells.map(c => c.textContent)"
        )
        assert reasons == [HOSTILE_REASON, "the kernel did not start"]
        assert HOSTILE_TASK in page.text_content("#by-task")
        assert page.evaluate(NOTHING_RAN) == [None, 0]
        page.screenshot(path=str(shots_dir() / "summary-eval.png"), full_page=True)

        page.click("#failure-reasons a >> text=#8")  # a failed episode's link opens it in the list
        page.wait_for_selector("text=sandbox_crashed: <script>")
        assert page.url.endswith("#episode=8&step=0")


def test_training_log_lands_on_its_curves(page: Any, tmp_path: Path) -> None:
    rows = train_rows(60)
    log = write_train_log(tmp_path / "train-log.jsonl", 60)
    rewards = [row["reward"] for row in rows]
    window = 6  # a tenth of the steps
    last_average = sum(rewards[-window:]) / window
    with omnienv_view(log, ready="/api/summary") as url:
        page.goto(url)
        page.wait_for_selector("#summary[data-kind=training]")
        assert page.url.endswith("/ui/summary.html?source=server")
        assert page.is_hidden("#tab-episodes")  # a training log has no episodes to list
        assert page.text_content("#stat-steps .value") == "60"
        assert page.text_content("#stat-average .value") == reward_text(last_average)
        assert page.text_content("#stat-last .value") == reward_text(rewards[-1])

        raw = page.query_selector("#reward-curve path.line.raw")
        average = page.query_selector("#reward-curve path.line.avg")
        assert raw.get_attribute("data-points") == "60" and average.get_attribute("data-points") == "60"
        for path in (raw, average):
            width, height = path.evaluate(BOX)
            assert width > 500 and height > 50  # it spans the chart and rises

        cards = page.query_selector_all("#metrics section.metric")
        names = [card.get_attribute("data-metric") for card in cards]
        assert names == [
            "reward_std",
            "loss",
            "rewards/WordleReward/mean",
            "tools/call_frequency",
            HOSTILE_METRIC,
            "completions/clipped_ratio",
        ]  # file order; model_name is text, not a curve
        for card in cards:
            assert card.is_visible() and card.query_selector("path.line").evaluate(BOX)[0] > 100
        assert HOSTILE_METRIC in page.text_content("#metrics")
        assert page.evaluate(NOTHING_RAN) == [None, 0]
        page.screenshot(path=str(shots_dir() / "summary-training.png"), full_page=True)

        with log.open("ab") as handle:  # the run goes on: reload reads the new steps
            handle.write(orjson.dumps({"kind": "train_step", "step": 61, "reward": 1.5}) + b"\n")
        page.click("#reload")
        # a function, not an expression: Playwright would eval an expression, which the page's CSP forbids
        page.wait_for_function("() => document.querySelector('#stat-steps .value').textContent === '61'")
        assert page.text_content("#stat-best .value") == "1.5"
        page.goto(f"{url}/ui/view.html?source=server")  # the episode list says where the curves are
        page.wait_for_selector("body[data-ready]")
        assert "training log" in page.text_content("#file-note")


def test_curves_of_huge_values_are_drawn(page: Any, tmp_path: Path) -> None:
    """At 1e17 a tick step of 5 is below the spacing of floats: the axis must still end (it once
    looped forever and hung the tab), and a single x value must still widen to a drawable range."""
    rows = [{"kind": "train_step", "step": 1, "reward": 1e17}, {"kind": "train_step", "step": 2, "reward": 1e17 + 32}]
    rows += [{"kind": "train_step", "step": 3, "reward": 1e17}, {"kind": "train_step", "step": 1e17, "late": 5.0}]
    log = tmp_path / "huge.jsonl"
    log.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    with running(create_viewer_app(log)) as url:
        page.goto(f"{url}/ui/summary.html?source=server")
        page.wait_for_selector("body[data-ready]")  # the page's deadline (TIMEOUT_MS), not a sleep
        assert page.query_selector("#reward-curve path.line.raw").get_attribute("data-points") == "3"
        assert page.query_selector_all("#reward-curve .axis.y text")  # the y axis has its ticks
        dot = page.query_selector("#metrics section.metric[data-metric=late] circle.dot")
        assert dot is not None and dot.get_attribute("cx") not in ("NaN", None)
