"""/ui on every server (and off with --no-ui), served from local files, without slowing start-up."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time

import httpx
import pytest

from omnienv.app import create_app
from omnienv.server import running
from omnienv.ui import STATIC_DIR
from omnienv.ui.routes import CONTENT_SECURITY_POLICY


def test_ui_is_served_by_default_and_references_only_local_files() -> None:
    with running(create_app("wordle")) as url, httpx.Client(base_url=url) as http:
        bare = http.get("/ui", follow_redirects=False)
        assert bare.status_code == 307 and bare.headers["location"] == "/ui/"
        page = http.get("/ui/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        for name in ("play.js", "view.js", "form.js", "render.js", "style.css", "view.html", "summary.html",
                     "summary.js", "charts.js"):  # fmt: skip
            assert http.get(f"/ui/{name}").status_code == 200, name
        assert http.get("/ui/../pyproject.toml").status_code == 404
    for path in STATIC_DIR.iterdir():  # no CDN: nothing fetched from another host
        text = path.read_text()
        assert not re.search(r"(src|href)=[\"']?(https?:)?//", text), path.name
        assert not re.search(r"(from|import)\s*\(?\s*[\"'](https?:)?//", text), path.name


def test_no_ui_turns_it_off() -> None:
    with running(create_app("wordle", ui=False)) as url:
        assert httpx.get(f"{url}/ui/").status_code == 404
        assert httpx.get(f"{url}/health").status_code == 200


@pytest.mark.parametrize(("flag", "status"), [("--ui", 200), ("--no-ui", 404)])
def test_serve_cli_ui_flag(flag: str, status: int) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "omnienv.cli.main", "serve", "wordle", "--port", str(port), flag]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "omnienv serve did not start"
            time.sleep(0.05)
        assert httpx.get(f"http://127.0.0.1:{port}/ui/").status_code == status
    finally:
        process.terminate()
        try:
            out, _ = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate(timeout=10)
    assert (b"/ui/" in out) == (flag == "--ui")  # the start-up line names the page only when it is served


def test_the_ui_adds_no_heavy_imports() -> None:
    """Start-up stays as fast with the pages on: they add only StaticFiles and our tiny package."""
    code = (  # the standard library's modules are not counted: which are loaded already depends on the
        # interpreter's start-up (coverage's hook in subprocesses loads importlib.util, say)
        "import sys; from omnienv.app import create_app; create_app('wordle', ui=False); "
        "before = set(sys.modules); create_app('wordle', ui=True); "
        "print(' '.join(sorted(m for m in set(sys.modules) - before "
        "if m.partition('.')[0] not in sys.stdlib_module_names)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    added = set(done.stdout.split())
    assert "omnienv.ui.routes" in added  # the check can fail: the pages did load
    assert added <= {"omnienv.ui", "omnienv.ui.routes", "starlette.staticfiles"}, added


def test_ui_pages_carry_the_viewers_security_headers() -> None:
    """`/ui/view.html` opens hostile files from disk here too: no framing, no script or request
    anywhere but this server (an image URL in a trajectory is no tracking pixel)."""
    with running(create_app("wordle")) as url, httpx.Client(base_url=url) as http:
        for path in ("/ui/", "/ui/view.html", "/ui/summary.html", "/ui/play.js"):
            reply = http.get(path)
            assert reply.status_code == 200, path
            assert reply.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, path
            assert reply.headers["x-frame-options"] == "DENY", path
            assert reply.headers["x-content-type-options"] == "nosniff", path
        assert http.get("/health").headers.get("content-security-policy") is None  # the API is not a page
    for rule in ("frame-ancestors 'none'", "connect-src 'self'", "img-src 'self' data:", "script-src 'self';"):
        assert rule in CONTENT_SECURITY_POLICY
