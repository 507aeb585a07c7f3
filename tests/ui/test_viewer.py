"""The trajectory viewer: `omnienv view FILE` in a real browser, filters, stepping, images, local files."""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from omnienv.app import create_app
from omnienv.core import Failure, ImageBlock, Observation, StepResult, TextBlock, ToolCall
from omnienv.rollout.trajectory import Episode, Step
from omnienv.server import running
from omnienv.ui.viewer import create_viewer_app
from tests.ui.envs import png
from tests.ui.shots import shots_dir
from tests.ui.viewing import omnienv_view

SOLVED = 3  # solver episodes written by the real `omnienv rollout`


def _desktop_episode(index: int) -> Episode:
    """A failed episode with a screenshot and a conversation, as an LLM rollout writes it."""
    shot = Observation((TextBlock("the screen"), ImageBlock(png(64, 48, (20, 90, 200)))))
    episode = Episode("desktop", index, "test/0001", 7, "llm", prompt=Observation.of("Open the editor."))
    episode.steps.append(Step(ToolCall("screenshot", {}, "c1"), StepResult(shot, 0.0), 0.05))
    episode.steps.append(
        Step(ToolCall("left_click", {"coordinate": [10, 20]}, "c2"), StepResult(Observation.of("clicked"), 0.25), 0.01)
    )
    episode.failure = Failure("sandbox_crashed", "the X server went away")
    episode.messages = [
        {"role": "system", "content": "You drive a desktop."},
        {"role": "user", "content": "Open the editor."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "the screen"},
    ]
    episode.model_calls = [  # as `omnienv eval --capture` records them: the server's own ids and logprobs
        {"index": 0, "prompt_token_ids": [1, 2, 3], "completion_token_ids": [7, 8], "logprobs": [-0.01, -2.5],
         "finish_reason": "tool_calls", "latency_s": 0.012, "missing": None},
        {"index": 1, "prompt_token_ids": None, "completion_token_ids": None, "logprobs": None,
         "finish_reason": "stop", "latency_s": 0.01, "missing": "the upstream returned no token ids"},
    ]  # fmt: skip
    return episode


@pytest.fixture(scope="module")
def trajectory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trajectories") / "run.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "omnienv.cli.main",
            "rollout",
            "wordle",
            "--policy",
            "solver",
            "--episodes",
            str(SOLVED),
            "--split",
            "test",
            "--out",
            str(path),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    with path.open("ab") as handle:
        handle.write(orjson.dumps(_desktop_episode(SOLVED).to_dict()) + b"\n")
        handle.write(b"this line is not json\n")
    return path


@pytest.fixture(scope="module")  # both tests only read: one process start serves them
def view_url(trajectory: Path) -> Iterator[str]:
    """`omnienv view FILE --port P` as a real process, reaped whatever happens."""
    with omnienv_view(trajectory) as url:
        yield url


def _rows(page: Any) -> list[str]:
    return page.eval_on_selector_all("#episodes tbody tr", "rows => rows.map(r => r.dataset.index)")


def test_view_lists_filters_and_steps_through(page: Any, view_url: str, trajectory: Path) -> None:
    page.goto(view_url)
    page.wait_for_selector("body[data-ready]")
    page.wait_for_selector("#episodes tbody tr")
    assert page.text_content("#file-name") == trajectory.name
    assert "1 line(s) skipped" in page.text_content("#file-note")
    assert _rows(page) == ["0", "1", "2", "3"]
    records = [orjson.loads(line) for line in trajectory.read_bytes().splitlines()[:SOLVED]]

    # filters: failure, reward range, success
    page.select_option("#filter-failure", "failed")
    assert _rows(page) == ["3"]
    page.select_option("#filter-failure", "ok")
    assert _rows(page) == ["0", "1", "2"]
    page.select_option("#filter-failure", "all")
    page.fill("#filter-min", "1")
    assert _rows(page) == ["0", "1", "2"]  # solver wins score at least 1
    page.fill("#filter-min", "")
    page.fill("#filter-max", "0.5")
    assert _rows(page) == []  # the failed episode has no reward to fall under 0.5: it is void, not 0.25
    assert "showing 0 of 4" in page.text_content("#filter-summary")
    page.fill("#filter-max", "")
    failed_reward = page.text_content("#episodes tbody tr[data-index='3'] td.num")
    mean = sum(record["reward"] for record in records) / SOLVED  # the solved three alone
    assert failed_reward == "–" and f"mean reward {round(mean, 4)}" in page.text_content("#filter-summary")
    page.select_option("#filter-success", "yes")
    assert _rows(page) == ["0", "1", "2"]
    page.select_option("#filter-success", "all")

    # a solved Wordle episode, step by step
    page.click("#episodes tbody tr[data-index='0']")
    page.wait_for_selector("#steps")
    steps = records[0]["steps"]
    assert "Let's play Wordle" in page.text_content("#prompt")
    for number, step in enumerate(steps, 1):
        assert page.text_content("#step-pos") == f"step {number} / {len(steps)}"
        shown = page.text_content(f"#steps .entry[data-step='{number}']")
        assert f'guess(word="{step["call"]["arguments"]["word"]}")' in shown
        assert step["observation"]["content"][0]["text"] in shown
        if number < len(steps):
            page.click("#step-next")
    assert "Correct!" in shown and "done" in shown
    assert page.is_disabled("#step-next")
    page.keyboard.press("ArrowLeft")  # keys step too
    assert page.text_content("#step-pos") == f"step {len(steps) - 1} / {len(steps)}"
    page.check("#step-all-state")
    assert page.eval_on_selector_all("#steps .entry", "e => e.length") == len(steps)

    # the failed desktop episode: failure, screenshot, conversation
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.wait_for_selector("text=sandbox_crashed: the X server went away")
    image = page.wait_for_selector("#steps img.shot")
    assert image.evaluate("img => img.decode().then(() => [img.naturalWidth, img.naturalHeight])") == [64, 48]
    page.click("#messages summary")
    conversation = page.text_content("#messages")
    assert "→ screenshot()" in conversation and "You drive a desktop." in conversation
    assert "left_click(coordinate=[10,20])" in page.text_content("#steps")
    page.click("#model-calls summary")  # the captured tokens, coloured by log-probability
    tokens = page.eval_on_selector_all(
        "#model-calls .token", "spans => spans.map(s => [s.textContent, s.dataset.logprob, s.style.background])"
    )
    assert [token[:2] for token in tokens] == [["7", "-0.01"], ["8", "-2.5"]]
    assert all(token[2] for token in tokens) and tokens[0][2] != tokens[1][2]  # a sure token and a gamble differ
    assert "the upstream returned no token ids" in page.text_content("#model-calls")
    page.screenshot(path=str(shots_dir() / "view-episode.png"), full_page=True)


def test_links_open_an_episode_at_a_step(page: Any, view_url: str) -> None:
    page.goto(f"{view_url}/ui/view.html?source=server#episode=3&step=1")
    page.wait_for_selector("#steps")
    assert page.text_content("#step-pos") == "step 2 / 2"
    assert "left_click" in page.text_content("#steps .entry")
    page.click("#step-strip [data-step='1']")  # the strip jumps between steps
    assert page.text_content("#step-pos") == "step 1 / 2"
    assert page.url.endswith("#episode=3&step=0")


def test_view_opens_a_local_file_on_an_env_server(page: Any, trajectory: Path) -> None:
    with running(create_app("wordle")) as url:
        page.goto(f"{url}/ui/view.html")
        page.wait_for_selector("body[data-ready]")
        assert page.is_visible("#file-input")
        page.set_input_files("#file-input", str(trajectory))
        page.wait_for_selector("#episodes tbody tr")
        assert _rows(page) == ["0", "1", "2", "3"]
        page.click("#episodes tbody tr[data-index='2']")
        assert page.text_content("#step-pos").startswith("step 1 / ")


def test_reload_shows_episodes_appended_since(page: Any, tmp_path: Path, trajectory: Path) -> None:
    path = tmp_path / "live.jsonl"
    lines = trajectory.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))
    with running(create_viewer_app(path)) as url:
        page.goto(url)
        page.wait_for_selector("#episodes tbody tr")
        page.click("#episodes tbody tr[data-index='1']")
        page.wait_for_selector("#steps")
        assert _rows(page) == ["0", "1"]
        with path.open("ab") as handle:
            handle.write(lines[3])  # the desktop episode with its failure
        page.click("#reload")
        # a function, not an expression: Playwright would eval an expression, which the viewer's CSP forbids
        page.wait_for_function("() => document.querySelectorAll('#episodes tbody tr').length === 3")
        assert "sandbox_crashed" in page.text_content("#episodes tbody tr[data-index='2']")
        assert page.get_attribute("#episodes tbody tr[data-index='1']", "class").strip() == "selected"


def test_viewer_api_follows_a_growing_file(tmp_path: Path, trajectory: Path) -> None:
    path = tmp_path / "growing.jsonl"
    lines = trajectory.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1][:20])  # the second line is still being written
    app = create_viewer_app(path)
    with running(app) as url:
        listed = httpx.get(f"{url}/api/trajectory").json()
        assert [e["index"] for e in listed["episodes"]] == [0]
        with path.open("ab") as handle:
            handle.write(lines[1][20:])
        listed = httpx.get(f"{url}/api/trajectory").json()
        assert len(listed["episodes"]) == 2 and listed["problems"] == []
        assert httpx.get(f"{url}/api/episodes/1").json() == orjson.loads(lines[1])
        missing = httpx.get(f"{url}/api/episodes/9")
        assert missing.status_code == 404 and "has 2" in missing.json()["error"]
        assert httpx.get(f"{url}/", follow_redirects=False).headers["location"].startswith("/ui/view.html")


def test_view_refuses_a_missing_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "omnienv.cli.main", "view", str(tmp_path / "nope.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "no trajectory file" in done.stderr


def test_a_local_file_is_read_by_the_servers_rules_and_odd_episodes_never_mislead(
    page: Any, trajectory: Path, tmp_path: Path
) -> None:
    """A local file: a `{"kind": ...}` line is no episode (as in `omnienv view`); a remote image URL
    in a conversation is shown as text, never fetched (a tracking pixel); odd messages and token
    lists still render; and an episode that cannot be rendered says so in its pane instead of
    leaving the previous one there under its name."""
    good = orjson.loads(trajectory.read_bytes().splitlines()[0])
    pixel = "http://127.0.0.1:9/pixel?opened=1"
    inline = f"data:image/png;base64,{base64.b64encode(png(4, 4, (0, 0, 0))).decode()}"
    odd = {
        **good,
        "messages": [None, {"role": "user", "content": [{"type": "image_url", "image_url": {"url": pixel}},
                                                         {"type": "image_url", "image_url": inline}]}],
        "model_calls": [{"completion_token_ids": "abc", "logprobs": 3}, None],
    }  # fmt: skip
    path = tmp_path / "odd.jsonl"
    lines = [good, {"kind": "note", "text": "not an episode"}, odd, {"env": "x", "steps": [None, 5]}]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    with running(create_app("wordle")) as url:
        page.goto(f"{url}/ui/view.html")
        page.wait_for_selector("body[data-ready]")
        page.set_input_files("#file-input", str(path))
        page.wait_for_selector("#episodes tbody tr")
        assert _rows(page) == ["0", "1", "2"]
        assert 'line 2: a "note" record, not an episode' in page.text_content("#file-note")
        page.click("#episodes tbody tr[data-index='0']")
        page.wait_for_selector("#steps")
        page.click("#episodes tbody tr[data-index='1']")
        page.wait_for_selector("#messages")
        assert page.text_content("#episode h2").startswith("Episode 1")
        sources = page.eval_on_selector_all("#messages img", "imgs => imgs.map(i => i.getAttribute('src'))")
        assert sources == [inline]
        assert f"image at {pixel} (not fetched)" in page.text_content("#messages")
        assert "0 completion" in page.text_content("#model-calls")
        page.click("#episodes tbody tr[data-index='2']")
        problem = page.wait_for_selector("#episode-problem")
        assert problem.text_content().startswith("Episode 2 cannot be shown")
        assert page.query_selector("#episode h2") is None and page.url.endswith("#episode=2&step=0")
