"""A hostile agent looks for omnienv's own task code to compute the answer: it must not be there.

The shape of a real deployment: a fresh virtualenv with a regular (non-editable) install of
omnienv from this checkout, ``omnienv serve jupyter`` started from it, and an agent playing over
the WebSocket. With the whole virtualenv mounted in the sandbox, ``import omnienv`` worked and
``omnienv.envs.jupyter.tasks.build`` gave the answer away.
"""

from __future__ import annotations

import ast
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from omnienv.envs.jupyter.tasks import build
from tests.net import free_port
from tests.security._jupyter import agent, needs_bwrap

pytestmark = needs_bwrap

ROOT = Path(__file__).resolve().parents[2]
TASK, FAMILY, VARIANT = "train/fib_mod-0", "fib_mod", 0

PROBE = (
    f"FAMILY, VARIANT = {FAMILY!r}, {VARIANT!r}\n"
    + r"""
import os, sys
report = {"sys.path": list(sys.path)}
try:
    import omnienv
    report["import"] = str(getattr(omnienv, "__file__", None) or list(omnienv.__path__))
except ImportError as exc:
    report["import"] = f"failed: {exc}"
try:
    from omnienv.envs.jupyter.tasks import build
    report["answer"] = str(build(FAMILY, VARIANT).answer)
except Exception as exc:
    report["answer"] = None
names, contents = [], []
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    names += [os.path.join(root, n) for n in dirs + files if "omnienv" in n.lower()]
for top in sys.path:
    for root, dirs, files in os.walk(top or "."):
        for name in files:
            if name.endswith((".py", ".pth", ".txt", ".json", "RECORD", "METADATA")):
                path = os.path.join(root, name)
                try:
                    with open(path, "rb") as f:
                        if b"omnienv" in f.read(1 << 20):
                            contents.append(path)
                except OSError:
                    pass
report["names"] = sorted(set(names))[:20]
report["contents"] = sorted(set(contents))[:20]
print(repr(report))
"""
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding a regular install of omnienv[server,jupyter] from this checkout."""
    venv = tmp_path_factory.mktemp("regular-install") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, f"{ROOT}[server,jupyter]"], check=True, timeout=600, cwd=venv.parent)
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import omnienv; print(omnienv.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=venv.parent,
    )
    assert found.stdout.startswith(str(venv)), found.stdout  # a regular install, not the checkout
    return venv


@contextlib.contextmanager
def omnienv_serve(venv: Path) -> Iterator[str]:
    port = free_port()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(venv.parent), "OMNIENV_JUPYTER_POOL_SIZE": "1"}
    server = subprocess.Popen(
        [str(venv / "bin" / "omnienv"), "serve", "jupyter", "--port", str(port), "--no-ui"],
        env=env,
        cwd=venv.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.stderr.read().decode()  # type: ignore[union-attr]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the server did not become healthy"
            time.sleep(0.1)
        yield url
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_a_regular_install_keeps_omnienv_and_its_tasks_out_of_the_sandbox(installed: Path) -> None:
    answer = str(build(FAMILY, VARIANT).answer)
    with omnienv_serve(installed) as url, agent(url, TASK) as player:
        result = player.run(PROBE)
        assert result.failure is None, result.failure
        text = result.observation.text
        report = ast.literal_eval(text[text.index("{") : text.rindex("}") + 1])
        assert report["import"].startswith("failed"), report
        assert report["answer"] is None, report
        assert report["names"] == [] and report["contents"] == [], report
        assert not any(str(installed) in path for path in report["sys.path"]), report
        final = player.answer(report["answer"] or "0")
        assert final.failure is None and final.done
        assert final.info["rubric"]["correct"] == 0.0 and final.reward < 1.0, final.info
        assert answer != "0"  # the guess the agent had to fall back on is wrong
