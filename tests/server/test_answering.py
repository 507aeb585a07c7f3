"""Frames answered inside the WebSocket protocol (omnienv.server.answering): in order, none lost.

A fast environment's steps are answered in ``data_received``, everything else by the app's
task; these tests mix the two and hold every reply to its frame's place.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from omnienv.server.answering import AnsweringProtocol
from omnienv.server.handler import Handler
from omnienv.server.lean import Gate, Inbox
from tests.polling import eventually
from tests.server.conftest import ws


def call(tool: str, **arguments: Any) -> str:
    return json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": tool, "arguments": arguments}})


RESET, STATE = json.dumps({"type": "reset", "data": {"task_id": "test/0003"}}), json.dumps({"type": "state"})
GUESSES = ("crane", "slate", "pious")


def block(state: bool = True) -> list[str]:
    """A reset and three guesses (answered at once), then a state (awaited by the app's task)."""
    return [RESET, *(call("guess", word=w) for w in GUESSES), *([STATE] if state else [])]


def check_block(replies: list[dict[str, Any]]) -> None:
    reset, *steps = replies
    assert reset["type"] == "observation" and "Wordle" in reset["data"]["observation"]["content"][0]["text"]
    if len(steps) > len(GUESSES):
        state = steps.pop()
        assert state["type"] == "state" and state["data"]["step_count"] == len(GUESSES), state
    for word, step in zip(GUESSES, steps, strict=True):
        assert step["type"] == "observation", step
        assert step["data"]["observation"]["result"]["data"].startswith(word.upper())


@pytest.fixture
def where_frames_ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """For each frame :meth:`Handler.frame` ran: "protocol" (in data_received) or "app" (its task)."""
    ran: list[str] = []
    frame = Handler.frame

    def spy(self: Handler, session: Any, raw: str | bytes) -> Any:
        ran.append("app" if asyncio.current_task() is not None else "protocol")
        return frame(self, session, raw)

    monkeypatch.setattr(Handler, "frame", spy)
    return ran


def test_steps_are_answered_in_the_protocol_and_the_rest_by_the_app(serve, where_frames_ran) -> None:
    url, _ = serve("wordle")
    with ws(url) as connection:
        for message in block():
            connection.send(message)
            reply = json.loads(connection.recv(timeout=5))
            assert reply["type"] != "error", reply
    # parsed once each, all in the protocol: the state request is handed to the app already parsed
    assert where_frames_ran == ["protocol"] * 5


def test_frames_sent_back_to_back_are_answered_in_order(serve, where_frames_ran) -> None:
    url, manager = serve("wordle")
    frames = block() * 40 + [json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}})]
    frames += block()
    with ws(url) as connection:
        for frame in frames:  # all sent before any reply is read
            connection.send(frame)
        replies = [json.loads(connection.recv(timeout=5)) for _ in frames]
    for start in range(0, 200, 5):
        check_block(replies[start : start + 5])
    assert replies[200]["type"] == "mcp" and replies[200]["data"]["id"] == 7
    check_block(replies[201:])
    assert len(where_frames_ran) == len(frames)  # each frame parsed once, wherever it ran
    eventually(lambda: manager.active == 0, what="session closed")


def test_a_client_that_stops_reading_loses_no_reply_and_keeps_the_order(serve, monkeypatch) -> None:
    """Once the socket's buffers fill, answering in the protocol stops (so reading does too); the
    app's task waits for the socket to drain; every reply still arrives, in order."""
    paused = threading.Event()
    buffered: list[int] = [0]
    made, pause_writing, handle_text = (
        AnsweringProtocol.connection_made,
        AnsweringProtocol.pause_writing,
        AnsweringProtocol.handle_text,
    )

    def small_buffers(self: AnsweringProtocol, transport: Any) -> None:
        made(self, transport)
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        transport.set_write_buffer_limits(high=2048)

    def note_pause(self: AnsweringProtocol) -> None:
        paused.set()
        pause_writing(self)

    def note_buffer(self: AnsweringProtocol, event: Any) -> None:
        handle_text(self, event)
        buffered[0] = max(buffered[0], self.transport.get_write_buffer_size())

    monkeypatch.setattr(AnsweringProtocol, "connection_made", small_buffers)
    monkeypatch.setattr(AnsweringProtocol, "pause_writing", note_pause)
    monkeypatch.setattr(AnsweringProtocol, "handle_text", note_buffer)
    url, _ = serve("wordle")
    frames = block(state=False) * 500  # every frame one the protocol could answer itself
    raw = socket.create_connection((url.split("//")[1].split(":")[0], int(url.rsplit(":", 1)[1])))
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    with ws_connect(url.replace("http://", "ws://") + "/ws", sock=raw, compression=None, max_queue=1) as connection:
        failures: list[BaseException] = []

        def send_all() -> None:
            try:
                for frame in frames:
                    connection.send(frame)
            except BaseException as exc:  # reported below
                failures.append(exc)

        sender = threading.Thread(target=send_all, name="test-sender")
        sender.start()
        try:
            assert paused.wait(20), "the server's writes never paused: the test did not fill the socket"
            replies = [json.loads(connection.recv(timeout=10)) for _ in frames]
        finally:
            sender.join(20)
        assert not failures and not sender.is_alive()
    # nothing more was written while the socket was full than the reply that filled it
    assert buffered[0] <= 2048 + 1024, buffered[0]
    for start in range(0, len(frames), 4):
        check_block(replies[start : start + 4])


def test_close_and_bad_utf8_take_the_apps_path(serve) -> None:
    url, manager = serve("wordle")
    with ws(url) as connection:
        connection.send(RESET)
        connection.recv(timeout=5)
        connection.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed) as closed:
            connection.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000
    with ws(url) as connection:
        connection.send(b'{"type": "state"}\xff', text=True)  # a text frame that is not UTF-8
        with pytest.raises(ConnectionClosed) as closed:
            connection.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
    eventually(lambda: manager.active == 0, what="sessions closed")


def test_a_connection_without_the_lean_queue_is_never_answered_in_the_protocol() -> None:
    class Bare:
        queue: Any = asyncio.Queue
        writable: Any = None

    bare = Bare()
    assert AnsweringProtocol.answer_with(bare, object(), object()) is False  # type: ignore[arg-type]
    assert getattr(bare, "handler", None) is None
    lean = Bare()
    lean.queue, lean.writable = Inbox(), Gate()
    assert AnsweringProtocol.answer_with(lean, "handler", "session") is True  # type: ignore[arg-type]
    assert (lean.handler, lean.session) == ("handler", "session")  # type: ignore[attr-defined]
