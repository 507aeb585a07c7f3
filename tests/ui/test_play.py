"""The play page in a real browser: win Wordle by typing guesses, and every form field kind."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

from omnienv.app import create_app
from omnienv.envs.wordle import Wordle, score_guess
from omnienv.envs.wordle.solver import next_guess
from omnienv.server import running
from tests.ui.envs import Forms

NATURAL_SIZE = "img => img.decode().then(() => [img.naturalWidth, img.naturalHeight])"


def solver_guesses(answer: str) -> list[str]:
    """The scripted solver's game against a known answer, played in-process."""
    history: list[tuple[str, str]] = []
    while not history or history[-1][0] != answer:
        word = next_guess(history)
        history.append((word, score_guess(word, answer)))
    assert len(history) <= 6
    return [word for word, _ in history]


def open_play(page: Any, url: str) -> None:
    page.goto(f"{url}/ui")  # the bare path redirects to the page
    page.wait_for_selector("body[data-ready]")


def test_win_wordle_through_the_page(page: Any, wordle_url: str) -> None:
    task = Wordle.tasks("test")[3]
    guesses = solver_guesses(task.answer)
    open_play(page, wordle_url)
    assert page.text_content("#env-name") == "wordle"
    page.select_option("#split", "test")
    page.wait_for_selector(f"#task option[value='{task.id}']", state="attached")
    page.select_option("#task", task.id)
    page.click("#reset")
    page.wait_for_selector("[data-kind=prompt]")
    assert "Let's play Wordle" in page.text_content("[data-kind=prompt]")
    assert page.text_content("#status-state") == "playing"

    for number, word in enumerate(guesses, 1):
        page.fill("#tool-guess-word", word)
        page.press("#tool-guess-word", "Enter")
        entry = page.wait_for_selector(f"[data-kind=step][data-step='{number}']")
        text = entry.text_content()
        assert f'guess(word="{word}")' in text
        assert f"{word.upper()} {score_guess(word, task.answer)}" in text  # the server's marks, shown

    final = page.text_content(f"[data-kind=step][data-step='{len(guesses)}']")
    assert "Correct!" in final and "done" in final
    reward = 1.0 + 0.5 * (1 - len(guesses) / 6)
    assert float(page.text_content("#status-total")) == pytest.approx(reward, abs=1e-4)
    assert page.text_content("#status-state") == "done"
    assert "success" in page.text_content("[data-kind=summary]")
    assert page.is_disabled("form[data-tool=guess] button.call")  # the episode is over
    page.screenshot(path=str(_shots() / "play-wordle.png"), full_page=True)

    # a new episode on the same page: a fresh start, tools enabled again
    page.click("#reset")
    # a function, not an expression: Playwright would eval an expression, which the page's CSP forbids
    page.wait_for_function("() => document.querySelectorAll('[data-kind=step]').length === 0")
    assert page.text_content("#status-step") == "0"
    assert page.is_enabled("form[data-tool=guess] button.call")


def test_bad_input_is_shown_and_the_session_lives(page: Any, wordle_url: str) -> None:
    open_play(page, wordle_url)
    page.click("#reset")
    page.wait_for_selector("[data-kind=prompt]")
    page.click("form[data-tool=guess] button.call")  # empty required field: nothing is sent
    assert "word is required" in page.text_content("form[data-tool=guess] .problem")
    assert page.query_selector("[data-kind=step]") is None
    page.fill("#tool-guess-word", "qqqqq")
    page.press("#tool-guess-word", "Enter")
    entry = page.wait_for_selector("[data-kind=step][data-step='1']")
    assert "not in the word list" in entry.text_content()
    assert "tool error" in entry.text_content()
    page.fill("#seed", "-3")
    page.click("#reset")
    assert "non-negative integer" in page.text_content("#task-problem")
    page.fill("#tool-guess-word", "crane")
    page.press("#tool-guess-word", "Enter")
    page.wait_for_selector("[data-kind=step][data-step='2']")
    page.click("#show-state")
    state = page.wait_for_selector("[data-kind=state] pre").text_content()
    assert json.loads(state)["guesses"] == ["crane"]


@pytest.fixture
def forms_url() -> Iterator[str]:
    with running(create_app(Forms)) as url:
        yield url


def test_forms_send_typed_arguments_and_images_render(page: Any, forms_url: str) -> None:
    open_play(page, forms_url)
    page.select_option("#task", "demo/2")
    assert '"level": 2' in page.text_content("#task-data pre")
    page.click("#reset")
    page.wait_for_selector("[data-kind=prompt]")
    form = "form[data-tool=record]"
    assert page.get_attribute("#tool-record-count", "type") == "number"
    assert page.get_attribute("#tool-record-flag", "type") == "checkbox"
    assert page.eval_on_selector("#tool-record-color", "e => e.tagName") == "SELECT"

    page.fill("#tool-record-text", "hello")
    page.fill("#tool-record-count", "2.5")
    page.fill("#tool-record-ratio", "0.25")
    page.fill("#tool-record-point", "10, 20")
    page.click(f"{form} button.call")
    assert "count" in page.text_content(f"{form} .problem")  # 2.5 is not an integer: not sent

    page.fill("#tool-record-count", "7")
    page.check("#tool-record-flag")
    page.select_option("#tool-record-color", label="green")
    page.fill("#tool-record-tags", "a b\nc")
    page.press("#tool-record-tags", "Control+Enter")  # sends from a text box
    text = page.wait_for_selector("[data-kind=step][data-step='1']").text_content()
    sent = json.loads(text.split("ARGS ", 1)[1].split("}", 1)[0] + "}")
    assert sent == {
        "text": "hello",
        "count": 7,
        "ratio": 0.25,
        "flag": True,
        "color": "green",
        "point": [10, 20],
        "tags": ["a b", "c"],
        "note": None,
    }

    # a click on a picture puts its pixel into the point field
    page.click("form[data-tool=picture] button.call")
    picture = page.wait_for_selector("[data-kind=step][data-step='2'] img.shot")
    picture.evaluate("img => img.decode()")
    page.fill("#tool-record-point", "")
    border = picture.evaluate("img => img.clientLeft")  # the click position counts from the border's edge
    picture.click(position={"x": 12 + border, "y": 25 + border})
    x, y = (int(v) for v in page.input_value("#tool-record-point").split(", "))
    assert abs(x - 12) <= 1 and abs(y - 25) <= 1  # mouse events carry whole CSS pixels
    assert "record.point" in page.text_content("[data-kind=step][data-step='2'] .pick-note")

    page.click("form[data-tool=snap] button.call")
    step = page.wait_for_selector("[data-kind=step][data-step='3']")
    image = step.query_selector("img.shot")
    assert image is not None
    assert image.evaluate(NATURAL_SIZE) == [40, 30]
    assert page.text_content("#status-state") == "done"
    assert float(page.text_content("#status-total")) == 1.0


def _shots() -> Any:
    from tests.ui.shots import shots_dir

    return shots_dir()


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="no Xvfb: `make system-deps` installs it")
def test_desktop_screenshot_click_fills_the_coordinate(page: Any) -> None:
    """A real Xvfb desktop: its screenshot shows up, and a click on it aims the next click."""
    from omnienv.sandboxes.xvfb import DisplaySpec, shared_pool

    try:
        with running(create_app("desktop")) as url:
            open_play(page, url)
            page.select_option("#split", "test")
            page.wait_for_selector("#task option[value='test/move-clock']", state="attached")
            page.select_option("#task", "test/move-clock")
            page.click("#reset")
            page.wait_for_selector("[data-kind=prompt]", timeout=60_000)
            page.click("form[data-tool=screenshot] summary")  # 19 tools: their forms start folded
            page.click("form[data-tool=screenshot] button.call")
            shot = page.wait_for_selector("[data-kind=step][data-step='1'] img.shot", timeout=60_000)
            assert shot.evaluate(NATURAL_SIZE) == [1024, 768]
            page.click("form[data-tool=left_click] summary")
            page.click("#tool-left_click-coordinate")
            box = shot.bounding_box()
            shot.click(position={"x": box["width"] / 2, "y": box["height"] / 2})
            x, y = (int(v) for v in page.input_value("#tool-left_click-coordinate").split(", "))
            assert abs(x - 512) <= 3 and abs(y - 384) <= 3  # the picture is shown scaled down
            page.click("form[data-tool=left_click] button.call")
            done = page.wait_for_selector("[data-kind=step][data-step='2']", timeout=60_000).text_content()
            assert f"({x},{y})" in done.replace(" ", "")
            page.screenshot(path=str(_shots() / "play-desktop.png"))
    finally:
        shared_pool(DisplaySpec()).close()


def test_leaving_the_page_closes_its_session(page: Any) -> None:
    app = create_app("wordle")
    with running(app) as url:
        open_play(page, url)
        page.click("#reset")
        page.wait_for_selector("[data-kind=prompt]")
        assert app.state.manager.active == 1
        page.goto("about:blank")
        deadline = time.monotonic() + 10
        while app.state.manager.active and time.monotonic() < deadline:
            time.sleep(0.02)
        assert app.state.manager.active == 0


SCHEMA_CASES = """async () => {
  const { mainType, toolForm } = await import("/ui/form.js");
  const types = [
    mainType({ type: "string" }), mainType({ type: ["integer", "null"] }),
    mainType({ anyOf: [{ type: "null" }, { type: "number" }] }), mainType({ enum: [1, 2] }),
    mainType({ const: "x" }), mainType({}),
  ];
  const sent = [];
  const { form } = toolForm({ name: "t", description: "", parameters: {
    type: "object", required: ["level", "opts"],
    properties: {
      level: { enum: [1, 2, 3], default: 2 },
      opts: { type: "object" },
      quiet: { type: "boolean", default: true },
      limit: { anyOf: [{ type: "integer" }, { type: "null" }], default: null },
      names: { type: "array", items: { type: "string" } },
      pairs: { type: "array", items: { type: "array" } },
    },
  } }, (args) => sent.push(args));
  document.body.append(form);
  form.querySelector("[name=opts]").value = '{"a": [1]}';
  form.querySelector("[name=pairs]").value = "[[1, 2]]";
  form.requestSubmit();
  form.querySelector("[name=quiet]").checked = false;
  form.querySelector("[name=limit]").value = "5";
  form.querySelector("[name=names]").value = "x\\ny";
  form.querySelector("[name=opts]").value = "{oops";
  form.requestSubmit();
  const problem = form.querySelector(".problem").textContent;
  form.querySelector("[name=opts]").value = "{}";
  form.requestSubmit();
  return { types, sent, problem };
}"""


def test_form_fields_follow_the_schema(page: Any, wordle_url: str) -> None:
    open_play(page, wordle_url)
    result = page.evaluate(SCHEMA_CASES)
    assert result["types"] == ["string", "integer", "number", "enum", "enum", "any"]
    assert result["problem"].startswith("opts: not valid JSON")
    assert result["sent"] == [
        {"level": 2, "opts": {"a": [1]}, "pairs": [[1, 2]]},  # defaults kept, unset optionals left out
        {"level": 2, "opts": {}, "quiet": False, "limit": 5, "names": ["x", "y"], "pairs": [[1, 2]]},
    ]
