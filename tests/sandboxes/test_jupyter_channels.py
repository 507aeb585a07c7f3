"""The host's ZMQ channels to kernels: one process holds as many sessions as its files allow."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from omnienv.sandboxes.cells import OutputLimits
from omnienv.sandboxes.jupyter.channels import Channels

SESSIONS = 200  # seven sockets each: 1,400, past a libzmq context's default of 1023
CONNECTION = {
    "ip": "127.0.0.1",
    "transport": "tcp",
    "key": "k",
    "signature_scheme": "hmac-sha256",
    **{f"{name}_port": 1 for name in ("shell", "iopub", "stdin", "control", "hb")},  # nothing listens
}


@pytest.fixture
def file_room() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 8192
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"the open-file limit ({hard}) is too low to hold {need} descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_one_process_opens_channels_for_more_sessions_than_zmqs_default_socket_count(file_room: None) -> None:
    """With libzmq's default of 1023 sockets a context, the 147th session failed: 'Too many open files'."""

    async def open_all() -> int:
        made: list[Channels] = []
        try:
            while len(made) < SESSIONS:
                made.append(Channels(CONNECTION, OutputLimits()))
            return len(made)
        finally:
            for channels in made:
                channels.close()

    assert asyncio.run(open_all()) == SESSIONS


def test_messages_read_the_same_with_the_fast_header_dates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Channels parse a header's date themselves (dateutil's parser cost 13 µs a header): what
    jupyter_client hands on must not change, dates included."""
    from jupyter_client import jsonutil
    from jupyter_client.session import Session

    dateutil_parses: list[str] = []
    parse = jsonutil._dateutil_parse
    monkeypatch.setattr(jsonutil, "_dateutil_parse", lambda text: dateutil_parses.append(text) or parse(text))

    async def read_both() -> tuple[dict[str, Any], dict[str, Any]]:
        channels = Channels(CONNECTION, OutputLimits())
        try:
            sender = Session(key=b"k")
            parent = sender.msg("execute_request", {"code": "x += 1"})
            message = sender.msg("stream", {"name": "stdout", "text": "1\n"}, parent=parent)
            parts = sender.serialize(message)[1:]  # without the identity delimiter
            fast = channels.client.session.deserialize(parts)
            assert dateutil_parses == []
            plain = Session(key=b"k").deserialize(parts)
            return fast, plain
        finally:
            channels.close()

    fast, plain = asyncio.run(read_both())
    assert isinstance(fast["header"]["date"], datetime) and fast["header"]["date"].tzinfo is not None
    assert isinstance(fast["parent_header"]["date"], datetime)
    assert fast == plain
    assert len(dateutil_parses) == 2  # the plain session's: header and parent header
