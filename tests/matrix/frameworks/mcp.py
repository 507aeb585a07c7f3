"""MCP (the official ``mcp`` SDK's client, main virtualenv) against our server's ``/mcp``.

MCP gives an agent tools and nothing else: no reset, no reward, no ``done``. So each cell is an
evaluation as it runs on an agent-only server: the operator starts the episode over
``POST /operator/sessions`` and hands the agent its prompt, the agent plays with the SDK's
``streamable_http_client`` and ``ClientSession`` (``initialize``, ``list_tools``, ``call_tool``)
on the ``/mcp?session_id=...`` it was given, and the operator follows the episode with
``GET /operator/sessions/{id}/state`` (``done``, ``truncated``, the step count, and the episode's
``reward`` once it is over: None for a void one, with its ``failure``). MCP has no per-step reward,
so the cell holds the episode's reward only. A crash reaches the agent as MCP marks a failed call,
``isError`` with a text saying the episode is void; every later call is refused the same way.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from typing import Any

import httpx
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from omnienv.app import create_app
from omnienv.server import running
from tests.matrix.cells import CELLS, Cell, Player, cell_report, crash_report, image_report

TIMEOUT_S = 300.0
"""One cell's limit (a desktop's reset starts a display and its apps)."""


class Operator:
    """The evaluation's side: starts episodes and reads their state over ``/operator``."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def _json(self, response: httpx.Response) -> dict[str, Any]:
        body: dict[str, Any] = response.json()
        if response.status_code >= 400:
            raise RuntimeError(f"{response.request.method} {response.request.url.path}: {body}")
        return body

    async def start(self, cell: Cell, seed: int) -> dict[str, Any]:
        body = {"task_id": cell.task_id, "seed": seed}
        return await self._json(await self.http.post("/operator/sessions", json=body))

    async def reset(self, session_id: str, cell: Cell, seed: int) -> dict[str, Any]:
        body = {"task_id": cell.task_id, "seed": seed}
        return await self._json(await self.http.post(f"/operator/sessions/{session_id}/reset", json=body))

    async def state(self, session_id: str) -> dict[str, Any]:
        state: dict[str, Any] = (await self._json(await self.http.get(f"/operator/sessions/{session_id}/state")))[
            "data"
        ]
        return state

    async def close(self, session_id: str) -> None:
        await self._json(await self.http.delete(f"/operator/sessions/{session_id}"))


def _prompt(reply: dict[str, Any]) -> str:
    content = reply["data"]["observation"]["content"]
    return "\n".join(block["text"] for block in content if block.get("type") == "text")


class Read:
    """One ``CallToolResult`` as the agent read it: its text blocks and its images."""

    def __init__(self, result: Any) -> None:
        self.is_error = bool(result.is_error)
        self.texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
        self.text = "\n".join(self.texts)
        self.images = [
            image_report("MCP ImageContent", base64.b64decode(block.data))
            for block in result.content
            if getattr(block, "type", None) == "image" and block.mime_type == "image/png"
        ]
        self.extras = {"structured_content": result.structured_content, "meta": result.meta}


async def _play(cell: Cell, url: str, token: str) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, trust_env=False, timeout=TIMEOUT_S) as http:
        operator = Operator(http)
        opened = await operator.start(cell, seed=0)
        session_id = opened["session_id"]
        try:
            return await _episodes(cell, url + opened["mcp_path"], operator, session_id, _prompt(opened))
        finally:
            await operator.close(session_id)


async def _episodes(cell: Cell, mcp_url: str, operator: Operator, session_id: str, prompt: str) -> dict[str, Any]:
    seen: list[Any] = [prompt, await operator.state(session_id)]
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    async with streamable_http_client(mcp_url) as (read, write), ClientSession(read, write) as agent:
        seen.append((await agent.initialize()).model_dump(mode="json"))
        seen.append((await agent.list_tools()).model_dump(mode="json"))
        player = Player(cell, prompt)
        calls = 0
        while True:
            call = player.act()
            answer = Read(await agent.call_tool(call.name, call.arguments))
            calls += 1
            texts.extend(answer.texts)
            images.extend(answer.images)
            seen.append(answer.extras)
            player.saw(call, answer.text)
            state = await operator.state(session_id)
            if state["done"] or state["truncated"]:
                break
        if state["step_count"] != calls:
            raise AssertionError(f"the operator's state disagrees with the episode's {calls} calls: {state}")

        await operator.reset(session_id, cell, seed=1)
        crashed = Read(await agent.call_tool(cell.crash.name, cell.crash.arguments))
        after = Read(await agent.call_tool(call.name, call.arguments))
        crash_state = await operator.state(session_id)
    masked = (
        crashed.is_error
        and "void" in crashed.text
        and after.is_error
        and "EPISODE_OVER" in after.text
        and crash_state["truncated"] is True
        and crash_state.get("failure") is not None
    )
    crash = crash_report(crash_state["reward"], "isError", masked)
    notes = f"crash: {crashed.text!r}; the call after it: {after.text!r}; state: {crash_state}"
    return cell_report(
        cell.env, rewards=None, total=state["reward"], done=state["done"], crash=crash, seen=seen, texts=texts,
        images=images, notes=notes[:2000],
    )  # fmt: skip


def play(cell: Cell) -> dict[str, Any]:
    token = secrets.token_urlsafe(16)
    app = create_app(cell.env_class, agent_only=True, operator_token=token)
    with running(app) as url:
        return asyncio.run(asyncio.wait_for(_play(cell, url, token), TIMEOUT_S))


def collect() -> dict[str, dict[str, Any]]:
    return {env: play(cell) for env, cell in CELLS.items()}
