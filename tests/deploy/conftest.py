"""One private Docker daemon, one local base image and the images the tests drive, for the whole run.

Making them (debootstrap, one build per image) is mostly waiting on package downloads, so it starts in
a background thread as soon as the run is known to hold these tests, and these tests run last: the
rest of the suite runs meanwhile. Everything is taken down when the run ends, even after a failure
(tests/deploy/daemon.py).
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

import pytest

from omnienv.deploy import build_image
from tests.conftest import IMAGE_WORKER
from tests.deploy.daemon import make_base_image, pip_ca_bundle, private_daemon

IMAGES = ("wordle", "jupyter", "terminal", "desktop")
"""The environments whose images the tests drive, built in this order (the desktop's, the largest, last)."""


class Images:
    """The daemon and the images, made in the background; a test waits only for what it needs."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._ready = {name: threading.Event() for name in ("daemon", *IMAGES)}
        self._built: dict[str, str] = {}
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._make, name="omnienv-images", daemon=True)

    def start(self) -> None:
        if self._thread.ident is None:
            self._thread.start()

    def _make(self) -> None:
        try:
            env = self._stack.enter_context(private_daemon())
            os.environ["DOCKER_HOST"] = env["DOCKER_HOST"]  # this process's Docker SDK: builds and tests
            self._ready["daemon"].set()
            base = make_base_image(env)
            for name in IMAGES:
                self._built[name] = build_image(name, base=base, ca_cert=pip_ca_bundle())
                self._ready[name].set()
        except BaseException as exc:
            self._error = exc
        finally:
            for event in self._ready.values():
                event.set()

    def _wait(self, what: str) -> None:
        self.start()  # no-op when the run's collection started it
        self._ready[what].wait()
        if self._error is not None:
            raise AssertionError(f"making the test images failed: {self._error}") from self._error

    def daemon(self) -> None:
        self._wait("daemon")

    def __call__(self, env: str) -> str:
        self._wait(env)
        return self._built[env]

    def close(self) -> None:
        if self._thread.ident is not None:
            self._thread.join()
        self._stack.close()
        os.environ.pop("DOCKER_HOST", None)


_images = Images()


def pytest_collection_modifyitems(session: pytest.Session, config: Any, items: list[pytest.Item]) -> None:
    """These tests go last, and their images start building now, while the rest of the run goes on.
    Under pytest-xdist every worker collects them and the first one runs them (tests/conftest.py):
    that one makes the images."""
    ours = [item for item in items if "tests/deploy/test_images.py" in item.nodeid]
    if not ours:
        return
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = [item for item in items if item not in ours] + ours
    if os.environ.get("PYTEST_XDIST_WORKER", IMAGE_WORKER) == IMAGE_WORKER:
        _images.start()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _images.close()


@pytest.fixture(scope="session")
def docker_env() -> dict[str, str]:
    _images.daemon()
    return dict(os.environ)


@pytest.fixture(scope="session")
def images(docker_env: dict[str, str]) -> Images:
    return _images
