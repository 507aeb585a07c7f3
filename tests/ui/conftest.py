"""A headless Chromium (Debian's package, driven by Playwright) and real servers on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from omnienv.app import create_app
from omnienv.server import running

CHROMIUM = os.environ.get("OMNIENV_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 15_000


@pytest.fixture(scope="package")  # Playwright's sync API holds an event loop until it stops: not past tests/ui
def browser() -> Iterator[Any]:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install 'omnienv[dev]' (playwright)")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}: `make system-deps` installs Debian's chromium package")
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, timeout=60_000)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; an uncaught script error or a console error fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))

    def on_console(message: Any) -> None:
        # HTTP error statuses are logged by the browser itself; tests assert on how the page shows them
        if message.type == "error" and "Failed to load resource" not in message.text:
            problems.append(f"console: {message.text}")

    page.on("console", on_console)
    try:
        yield page
    finally:
        context.close()
    assert not problems, problems


@pytest.fixture
def wordle_url() -> Iterator[str]:
    with running(create_app("wordle")) as url:
        yield url
