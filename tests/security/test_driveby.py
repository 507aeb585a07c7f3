"""A web page in the user's browser cannot drive a local server (drive-by, DNS rebinding, CSRF).

Every route checks ``Host`` (a loopback name, the bound host, or ``--allow-host``) and ``Origin``
(absent, loopback, or ``--allow-origin``); state-changing requests take JSON bodies only, since a
page may send ``text/plain`` and form bodies cross-site without the browser asking first. The
last test drives real Chromium: a hostile page at ``http://evil.test:PORT`` (Chromium maps the name
to 127.0.0.1) opens the WebSocket and posts to the routes; the server makes no environment.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import subprocess
import sys
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

from omnienv.app import create_app
from omnienv.server import running, uvicorn_config
from tests.net import free_port
from tests.polling import eventually
from tests.server.conftest import ws
from tests.server.test_ws import ask
from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS

STEP = {"action": {"type": "call_tool", "tool_name": "ping", "arguments": {}}}
PLAIN = {"content-type": "text/plain"}


def refused(reply: httpx.Response, *, fix: str) -> None:
    assert reply.status_code == 403, reply.text
    data = reply.json()["data"]
    assert data["code"] == "ORIGIN_REFUSED" and fix in data["message"], data


def upgrade(url: str, **headers: str) -> tuple[int, bytes]:
    """A raw WebSocket handshake on /ws with exactly these headers: (HTTP status, the rest)."""
    parts = urlsplit(url)
    lines = [
        "GET /ws HTTP/1.1",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Version: 13",
        f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
    ]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as conn:
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = conn.recv(4096)
            if not chunk:
                break
            reply += chunk
        if b" 101 " not in reply.split(b"\r\n", 1)[0]:
            conn.settimeout(2)
            try:
                while chunk := conn.recv(4096):
                    reply += chunk
            except TimeoutError:
                pass
    return int(reply.split(b" ", 2)[1]), reply


def test_foreign_host_names_are_refused_on_every_route(serve, counted) -> None:
    url, manager = serve(counted)
    port = urlsplit(url).port
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        for host in ("evil.test", f"evil.test:{port}", "127.0.0.1.evil.test", "localhost.evil.test:80", "10.1.2.3"):
            for method, path in (
                ("GET", "/health"),
                ("GET", "/ui/"),
                ("POST", "/sessions"),
                ("POST", "/reset"),
                ("GET", "/state"),
                ("POST", "/mcp"),
                ("POST", "/seed_session"),
            ):
                refused(http.request(method, path, json={}, headers={"host": host}), fix="--allow-host")
            status, body = upgrade(url, Host=host)
            assert status == 403 and b"ORIGIN_REFUSED" in body, body
        assert counted.peak == 0 and manager.active == 0
        for host in ("localhost", f"localhost:{port}", "127.0.0.1", "127.8.9.10:1", "[::1]:8000", "LOCALHOST."):
            assert http.get("/health", headers={"host": host}).status_code == 200, host
            assert upgrade(url, Host=host)[0] == 101, host


def test_foreign_origins_are_refused_and_clients_without_one_pass(serve, counted) -> None:
    url, manager = serve(counted)
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        for origin in ("http://evil.test", "https://example.com:8000", "null", "http://127.0.0.1.evil.test"):
            refused(http.post("/sessions", headers={"origin": origin}), fix="--allow-origin")
            refused(http.post("/reset", json={}, headers={"origin": origin}), fix="--allow-origin")
            refused(http.get("/health", headers={"origin": origin}), fix="--allow-origin")
            with pytest.raises(InvalidStatus) as caught:
                ws_connect(url.replace("http", "ws") + "/ws", origin=origin, proxy=None, open_timeout=5)
            assert caught.value.response.status_code == 403
        assert counted.peak == 0 and manager.active == 0
        for origin in ("http://localhost:3000", "http://127.0.0.1:9", "https://[::1]"):
            assert http.post("/reset", json={}, headers={"origin": origin}).status_code == 200, origin
        assert http.post("/reset", json={}).status_code == 200  # no Origin: not a browser
    with ws(url) as socket_:  # the websockets client sends no Origin
        assert ask(socket_, {"type": "reset", "data": {}})["type"] == "observation"


def test_cross_site_simple_bodies_are_refused(serve, counted) -> None:
    url, manager = serve(counted)
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        session_id = http.post("/sessions").json()["session_id"]
        for ctype in (
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/octet-stream",
            "application/xml",
        ):
            for path in (
                "/sessions",
                f"/sessions/{session_id}/reset",
                "/reset",
                "/step",
                "/mcp",
                "/create_session",
                "/create",
                "/seed_session",
                "/guess",
            ):
                reply = http.post(path, content=b'{"action": {}}', headers={"content-type": ctype})
                assert reply.status_code == 415, (path, reply.text)
                data = reply.json()["data"]
                assert data["code"] == "UNSUPPORTED_MEDIA_TYPE" and "application/json" in data["message"]
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):  # even empty
            assert http.post("/sessions", headers={"content-type": ctype}).status_code == 415
            assert http.request("DELETE", f"/sessions/{session_id}", headers={"content-type": ctype}).status_code == 415
        assert manager.active == 1 and counted.peak == 1
        # an empty body labelled with a type no page can send cross-site unasked (aiohttp's empty POSTs) passes
        octet = {"content-type": "application/octet-stream"}
        assert http.post(f"/sessions/{session_id}/reset", headers=octet).status_code == 200
        json_utf8 = {"content-type": "application/json; charset=utf-8"}
        assert http.post("/reset", content=b"{}", headers=json_utf8).status_code == 200
        assert http.post(f"/sessions/{session_id}/reset").status_code == 200  # no body, no type: fine
        assert http.delete(f"/sessions/{session_id}").status_code == 200


def test_allow_origin_and_allow_host_widen_the_defaults(serve) -> None:
    url, _ = serve("wordle", allow_origins=("http://trainer.example:8080",), allow_hosts=("gpu-box", "lab:9000"))
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        assert http.get("/health", headers={"origin": "http://trainer.example:8080"}).status_code == 200
        refused(http.get("/health", headers={"origin": "http://trainer.example:8081"}), fix="--allow-origin")
        assert http.get("/health", headers={"host": "gpu-box:1234"}).status_code == 200
        assert http.get("/health", headers={"host": "lab:9000"}).status_code == 200
        refused(http.get("/health", headers={"host": "lab:9001"}), fix="--allow-host")
    url, _ = serve("wordle", allow_origins=("*",), allow_hosts=("*",))
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        assert http.get("/health", headers={"origin": "http://anything", "host": "any.name"}).status_code == 200


def test_the_bound_host_is_allowed_but_not_a_wildcard() -> None:
    app = create_app("wordle")
    guard = app.state.guard
    uvicorn_config(app, host="0.0.0.0", port=8000)
    assert not guard.host_ok("0.0.0.0:8000") and not guard.host_ok("192.0.2.10:8000")
    uvicorn_config(app, host="192.0.2.10", port=8000)  # what serve() and running() do with their host
    assert guard.host_ok("192.0.2.10:8000") and guard.host_ok("localhost:1") and not guard.host_ok("192.0.2.11")
    with running(app) as url, httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        assert http.get("/health", headers={"host": "192.0.2.10:8000"}).status_code == 200
        refused(http.get("/health", headers={"host": "192.0.2.11"}), fix="--allow-host 192.0.2.11")
    with pytest.raises(ValueError, match="allow"):
        create_app("wordle", allow_hosts=("http://not-a-host/",))
    with pytest.raises(ValueError, match="allow"):
        create_app("wordle", allow_origins=("evil.test",))


# -- real Chromium ----------------------------------------------------------------------------

HOSTILE = """<!doctype html><title>cute cats</title><script>
const q = new URLSearchParams(location.search);
const target = q.get("target"), session = q.get("session"), evil = q.get("evil");
function socket(url) {
  return new Promise((resolve) => {
    const events = [];
    const sock = new WebSocket(url);
    sock.onopen = () => { events.push("open"); sock.send(JSON.stringify({type: "reset", data: {}})); };
    sock.onmessage = (m) => events.push("message " + m.data);
    sock.onerror = () => events.push("error");
    sock.onclose = (e) => { events.push("close " + e.code); resolve(events); };
    setTimeout(() => resolve(events.concat("timeout")), 8000);
  });
}
async function post(url, body) {
  try {
    const r = await fetch(url, {method: "POST", mode: "no-cors", headers: {"content-type": "text/plain"}, body});
    return r.type;
  } catch (e) { return "failed: " + e; }
}
(async () => {
  const out = {};
  out.ws = await socket(`ws://${target}/ws`);
  out.wsRebound = await socket(`ws://${evil}/ws`);
  const reset = JSON.stringify({});
  const step = JSON.stringify({action: {type: "call_tool", tool_name: "ping", arguments: {}}});
  for (const base of [`http://${target}`, `http://${evil}`]) {
    out[base] = [await post(`${base}/sessions`, ""), await post(`${base}/sessions/${session}/reset`, reset),
                 await post(`${base}/sessions/${session}/step`, step), await post(`${base}/reset`, reset),
                 await post(`${base}/step`, step)];
  }
  window.results = out;
})();
</script>"""


def hostile_app() -> Starlette:
    async def page(request: Any) -> HTMLResponse:
        return HTMLResponse(HOSTILE)

    return Starlette(routes=[Route("/", page)])


async def attack(page_url: str, rebound_url: str) -> tuple[dict[str, Any], list[tuple[str, int]], int]:
    from playwright.async_api import async_playwright

    args = [*CHROMIUM_ARGS, "--host-resolver-rules=MAP evil.test 127.0.0.1", "--no-proxy-server"]
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, args=args, headless=True, timeout=60_000)
        try:
            page = await browser.new_page()
            seen: list[tuple[str, int]] = []
            page.on("response", lambda response: seen.append((response.url, response.status)))
            await page.goto(page_url)
            await page.wait_for_function("window.results !== undefined", timeout=30_000)
            results = await page.evaluate("window.results")
            rebinding = await page.goto(rebound_url)  # after rebinding, the server under the page's name
            return results, seen, rebinding.status if rebinding else 0
        finally:
            await browser.close()


def test_a_hostile_page_in_chromium_cannot_drive_the_server(serve, counted) -> None:
    pytest.importorskip("playwright.async_api", reason="pip install 'omnienv[dev]' (playwright)")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}: `make system-deps` installs Debian's chromium package")
    url, manager = serve(counted)
    port = urlsplit(url).port
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        session_id = http.post("/sessions").json()["session_id"]  # the user's own session
        with running(hostile_app()) as evil:
            evil_port = urlsplit(evil).port
            page_url = (
                f"http://evil.test:{evil_port}/?target=127.0.0.1:{port}&session={session_id}&evil=evil.test:{port}"
            )
            results, seen, rebound = asyncio.run(
                asyncio.wait_for(attack(page_url, f"http://evil.test:{port}/health"), 120)
            )
        assert rebound == 403
        for key in ("ws", "wsRebound"):
            assert "open" not in results[key] and not any(e.startswith("message") for e in results[key]), results
        statuses = {
            urlsplit(u).path + "@" + urlsplit(u).netloc: s
            for u, s in seen
            if urlsplit(u).port == port and urlsplit(u).path != "/health"
        }
        assert len(statuses) == 10 and set(statuses.values()) == {403}, statuses
        assert manager.active == 1 and counted.live == 1 and counted.peak == 1
        state = http.get(f"/sessions/{session_id}/state").json()
        assert state["data"]["episode_id"] is None and state["data"]["step_count"] == 0, state  # never reset
        assert http.delete(f"/sessions/{session_id}").status_code == 200


def test_a_loopback_page_on_another_port_cannot_post_simple_bodies(serve, counted) -> None:
    pytest.importorskip("playwright.async_api", reason="pip install 'omnienv[dev]' (playwright)")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}")
    url, manager = serve(counted)
    port = urlsplit(url).port
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
        session_id = http.post("/sessions").json()["session_id"]
        with running(hostile_app()) as evil:
            page_url = f"{evil}/?target=127.0.0.1:{port}&session={session_id}&evil=localhost:{port}"
            _, seen, _ = asyncio.run(asyncio.wait_for(attack(page_url, f"{url}/health"), 120))
        posts = {
            urlsplit(u).path + "@" + urlsplit(u).netloc: s
            for u, s in seen
            if urlsplit(u).port == port and urlsplit(u).path != "/health"
        }
        assert len(posts) == 10 and set(posts.values()) == {415}, posts
        # loopback origins are trusted by default, so its WebSockets were served; its posts made nothing
        eventually(lambda: manager.active == 1 and counted.live == 1, what="the page's sockets closed")
        state = http.get(f"/sessions/{session_id}/state").json()
        assert state["data"]["episode_id"] is None, state
        assert http.delete(f"/sessions/{session_id}").status_code == 200


# -- the command lines ------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["-m", "omnienv.app"], ["-m", "omnienv.cli.main", "serve"]])
def test_the_command_lines_take_allow_host_and_allow_origin(command: list[str]) -> None:
    port = free_port()
    args = [
        sys.executable,
        *command,
        "wordle",
        "--port",
        str(port),
        "--allow-host",
        "gpu-box",
        "--allow-origin",
        "http://trainer.example",
    ]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, trust_env=False, timeout=5) as http:
            deadline = time.monotonic() + 60
            while True:
                assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
                try:
                    if http.get("/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the server did not become healthy"
                time.sleep(0.05)
            assert (
                http.get("/health", headers={"host": "gpu-box", "origin": "http://trainer.example"}).status_code == 200
            )
            refused(http.get("/health", headers={"host": "other-box"}), fix="--allow-host")
            refused(http.get("/health", headers={"origin": "http://evil.test"}), fix="--allow-origin")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
        if server.stderr:
            server.stderr.close()
    bad = subprocess.run(
        [sys.executable, *command, "wordle", "--allow-origin", "evil.test"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode != 0 and "allow" in (bad.stderr + bad.stdout)
