"""One close rule on every route: a session a connection holds closes when that connection lets go."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import orjson
import pytest
from websockets.sync.client import connect as ws_connect

from omnienv.app import create_app
from omnienv.envs.wordle import Wordle
from omnienv.server import running
from tests.polling import eventually


@pytest.fixture
def served() -> Iterator[tuple[str, object]]:
    app = create_app(Wordle)
    with running(app) as url:
        yield url, app.state.manager


def test_http_and_json_rpc_closes_wait_for_the_attached_socket(served: tuple[str, object]) -> None:
    url, manager = served
    with httpx.Client(base_url=url, timeout=10) as http:
        for close in ("http", "json-rpc"):
            sid = http.post("/sessions").json()["session_id"]
            with ws_connect(f"{url.replace('http', 'ws')}/ws?session_id={sid}") as ws:
                if close == "http":
                    reply = http.delete(f"/sessions/{sid}").json()
                else:
                    rpc = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close", "params": {"session_id": sid}}
                    reply = http.post("/mcp", json=rpc).json()["result"]
                assert reply == {"session_id": sid, "closed": False, "closing": True}
                ws.send(orjson.dumps({"type": "reset", "data": {"seed": 1}}).decode())
                frame = orjson.loads(ws.recv(timeout=10))
                assert frame["type"] == "observation"  # the socket's client plays on
                assert manager.find(sid, "openenv") is not None  # type: ignore[attr-defined]
            eventually(lambda sid=sid: manager.find(sid, "openenv") is None, what="closed when the socket left")  # type: ignore[attr-defined]
            free = http.post("/sessions").json()["session_id"]
            assert http.delete(f"/sessions/{free}").json() == {"session_id": free, "closed": True, "closing": False}
