"""The slim stand-ins for uvicorn's per-connection queue and event (omnienv.server.lean)."""

from __future__ import annotations

import asyncio

from omnienv.server.lean import Gate, Inbox


def test_inbox_is_first_in_first_out_and_wakes_its_reader() -> None:
    async def scenario() -> list[object]:
        inbox = Inbox()
        inbox.put_nowait(1)
        reader = asyncio.ensure_future(asyncio.gather(inbox.get(), inbox.get()))
        await asyncio.sleep(0)
        inbox.put_nowait(2)
        got = list(await reader)
        assert inbox.empty() and inbox.qsize() == 0
        return got

    assert asyncio.run(scenario()) == [1, 2]


def test_a_cancelled_reader_loses_no_item() -> None:
    async def scenario() -> object:
        inbox = Inbox()
        reader = asyncio.ensure_future(inbox.get())
        await asyncio.sleep(0)
        inbox.put_nowait("frame")
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        return await inbox.get()

    assert asyncio.run(scenario()) == "frame"


def test_gate_holds_senders_while_closed() -> None:
    async def scenario() -> None:
        gate = Gate()
        assert await gate.wait()
        gate.clear()
        senders = [asyncio.ensure_future(gate.wait()) for _ in range(2)]
        await asyncio.sleep(0)
        assert not any(s.done() for s in senders) and not gate.is_set()
        gate.set()
        assert await asyncio.gather(*senders) == [True, True]

    asyncio.run(scenario())
