"""The play page over the sandboxed environments, in a real browser: Jupyter's kernels and the
terminal's Harbor tasks, each won through the forms its tool schemas make (multi-line code and
file contents typed key by key into them)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from omnienv.app import create_app
from omnienv.envs.jupyter import jupyter_tasks
from omnienv.envs.jupyter.solutions import solution
from omnienv.envs.terminal.env import SUITE
from omnienv.server import running
from tests.ui.shots import shots_dir
from tests.ui.test_play import open_play

SANDBOX_MS = 90_000
"""A reset waits for a sandbox (a kernel, a shell and its workspace), a submit for the verifier's."""


def pick_task(page: Any, split: str, task_id: str) -> None:
    page.select_option("#split", split)
    page.wait_for_selector(f"#task option[value='{task_id}']", state="attached")
    page.select_option("#task", task_id)


def start(page: Any) -> str:
    """Reset, wait for the prompt, and return it."""
    page.click("#reset")
    prompt = page.wait_for_selector("[data-kind=prompt]", timeout=SANDBOX_MS).text_content()
    assert page.text_content("#task-problem") == ""
    assert page.text_content("#status-state") == "playing"
    return prompt


def type_into(page: Any, selector: str, text: str) -> None:
    """Type ``text`` key by key, as a person does: every newline is an Enter press."""
    steps = page.text_content("#status-step")
    page.locator(selector).press_sequentially(text)
    assert page.input_value(selector) == text  # the Enters made lines, and sent nothing
    assert page.text_content("#status-step") == steps


def step(page: Any, number: int) -> Any:
    entry = page.wait_for_selector(f"[data-kind=step][data-step='{number}']", timeout=SANDBOX_MS)
    assert page.query_selector("[data-kind=error]") is None, page.text_content("[data-kind=error]")
    return entry


def step_output(entry: Any) -> str:
    return "\n".join(block.text_content() for block in entry.query_selector_all(".blocks pre.text"))


def shown_info(entry: Any) -> Any:
    """The step's ``info``, as its folded JSON view shows it."""
    return json.loads(entry.query_selector("details.json pre").text_content())


def assert_won(page: Any, steps: int, reward: float) -> None:
    assert page.text_content("#status-state") == "done"
    assert page.text_content("#status-step") == str(steps)
    assert float(page.text_content("#status-total")) == pytest.approx(reward, abs=1e-4)
    summary = page.text_content("[data-kind=summary]")
    assert f"after {steps} step(s)" in summary and "· success" in summary, summary
    assert all(button.is_disabled() for button in page.query_selector_all("form.tool button.call"))


# -- Jupyter ---------------------------------------------------------------------------------------


@pytest.fixture
def jupyter_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``omnienv serve jupyter`` on 127.0.0.1; its kernels are killed at the end, whatever happened."""
    from omnienv.sandboxes import jupyter as jupyter_sandbox

    monkeypatch.setenv("OMNIENV_JUPYTER_POOL_SIZE", "1")  # one kernel waits: the test plays one episode
    app = create_app("jupyter")
    try:
        with running(app, timeout=60) as url:  # its start-up checks that kernels can be sandboxed here
            yield url
        assert app.state.manager.active == 0  # stopping the server closed the session and its kernel
    finally:
        jupyter_sandbox.default_pool().close()


def test_solve_a_jupyter_task_through_the_page(page: Any, jupyter_url: str) -> None:
    task = next(task for task in jupyter_tasks("test") if task.id == "test/caesar-3")
    answer = str(task.answer)  # a sentence: nowhere on the page by chance
    kind, source = solution(task.data["family"], task.data["params"])  # the oracle's cell, reading secret.txt
    assert kind == "code" and source.count("\n") >= 2
    open_play(page, jupyter_url)
    assert page.text_content("#env-name") == "jupyter"
    pick_task(page, "test", task.id)
    assert "Caesar cipher" in page.text_content("#task-data pre")
    prompt = start(page)
    assert task.data["question"] in prompt and "secret.txt" in prompt
    assert page.get_attribute("#tool-final_answer-answer", "type") == "text"
    assert answer not in page.text_content("body")  # the task's answer never reaches the page

    code = "print(6 * 7)\n" + source  # multi-line: a text box takes it, Enter makes lines
    assert page.eval_on_selector("#tool-add_and_execute_code_cell-code", "e => e.tagName") == "TEXTAREA"
    type_into(page, "#tool-add_and_execute_code_cell-code", code)
    page.click("form[data-tool=add_and_execute_code_cell] button.call")
    cell = step(page, 1)
    assert "add_and_execute_code_cell(code=" in cell.text_content()
    output = step_output(cell)
    assert output == f"42\nANSWER: {answer}", output  # the kernel's stdout, its lines kept
    assert page.text_content("#status-state") == "playing"
    assert page.query_selector("[data-kind=summary]") is None

    found = re.findall(r"ANSWER: (.+)", output)[-1]  # what the oracle submits: read off the page
    page.fill("#tool-final_answer-answer", found)
    page.press("#tool-final_answer-answer", "Enter")
    final = step(page, 2)
    assert f"Answer submitted: {answer}" in step_output(final)
    assert "done" in final.text_content()
    assert shown_info(final) == {"success": True, "rubric": {"correct": 1, "efficiency": 1}}
    # the rubric: 1 for the right answer, plus 0.1 for the fewest calls (one cell, then the answer)
    assert_won(page, 2, 1.1)
    page.screenshot(path=str(shots_dir() / "play-jupyter.png"), full_page=True)


# -- the terminal ----------------------------------------------------------------------------------

DEDUPE_AWK = r"""{
  gsub(/^[ \t\r]+|[ \t\r]+$/, "")
  $0 = tolower($0)
}
$0 != "" && !seen[$0]++
"""
"""text-dedupe-lines' solution/solve.sh, as a file of its own."""


@pytest.fixture
def terminal_url() -> Iterator[str]:
    """``omnienv serve terminal``; stopping it closes the session's shell and sandbox."""
    app = create_app("terminal")
    with running(app, timeout=60) as url:
        yield url
    assert app.state.manager.active == 0


def test_solve_a_terminal_task_through_the_page(page: Any, terminal_url: str) -> None:
    task = SUITE / "text-dedupe-lines"
    emails = (task / "environment" / "app" / "emails.txt").read_text()
    expected = (task / "tests" / "expected.txt").read_text()
    open_play(page, terminal_url)
    assert page.text_content("#env-name") == "terminal"
    pick_task(page, "train", "train/text-dedupe-lines")
    prompt = start(page)
    assert "/app/unique.txt" in prompt
    assert page.input_value("#tool-run-timeout") == "60"  # the schema's default, prefilled

    page.fill("#tool-run-command", "wc -l < emails.txt")
    page.press("#tool-run-command", "Control+Enter")
    look = step(page, 1)
    assert step_output(look) == f"{emails.count(chr(10))}\n[exit code 0]"

    type_into(page, "#tool-write_file-content", DEDUPE_AWK)
    page.fill("#tool-write_file-path", "dedupe.awk")
    page.press("#tool-write_file-path", "Enter")
    wrote = step(page, 2)
    assert step_output(wrote) == f"wrote {len(DEDUPE_AWK.encode())} bytes to dedupe.awk"

    page.fill("#tool-run-command", "awk -f dedupe.awk emails.txt > unique.txt && cat unique.txt")
    page.click("form[data-tool=run] button.call")
    solved = step(page, 3)
    assert step_output(solved) == expected + "[exit code 0]"
    assert page.text_content("#status-state") == "playing"

    page.click("form[data-tool=submit] button.call")
    graded = step(page, 4)
    assert "graded the workspace" in step_output(graded)
    assert "done" in graded.text_content()
    verdict = {"reward": 1, "file_exists": 1, "exact_match": 1}  # the verifier's named rewards
    assert shown_info(graded) == {"success": True, "rubric": verdict}
    assert_won(page, 4, 1.0)  # the task's own verifier, run over the workspace the page left
    page.screenshot(path=str(shots_dir() / "play-terminal.png"), full_page=True)
