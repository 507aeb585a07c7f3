"""The standard MCP transports with the official ``mcp`` SDK client: streamable HTTP and stdio."""

from __future__ import annotations

import asyncio
import base64
import sys
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from omnienv.core import Environment, Failure, ImageBlock, Observation, StepResult, Task, ToolError, ToolResult, tool
from omnienv.envs.wordle.solver import next_guess, read_marks
from omnienv.server.mcp_sdk import OPENING_URI, tool_result
from tests.polling import eventually
from tests.server.conftest import Crash

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
TIMEOUT = 60


class Pictures(Environment):
    """Answers with an image and text; ``fail`` is a tool error the agent reads."""

    blocking = False

    def setup(self, task: Task | None, rng: Any) -> str:
        return "draw something"

    @tool
    def draw(self) -> ToolResult:
        """Return a picture."""
        return ToolResult.of([ImageBlock(PNG), "a picture"], reward=1.0)

    @tool
    def fail(self) -> str:
        """Always refuse."""
        raise ToolError("cannot do that: try draw")


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside the SDK's nested exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, TIMEOUT))


@asynccontextmanager
async def http_session(url: str):
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def play_wordle(session: ClientSession) -> list[str]:
    """Play to the end with the scripted solver; returns the observation texts."""
    history: list[tuple[str, str]] = []
    texts = []
    for _ in range(6):
        result = await session.call_tool("guess", {"word": next_guess(history)})
        assert result.is_error is False
        text = result.content[0].text
        texts.append(text)
        marks = read_marks(text)
        assert marks is not None, text
        history.append(marks)
        if set(marks[1]) == {"🟩"}:
            break
    return texts


def test_the_sdk_client_plays_wordle_to_a_win_over_streamable_http(serve) -> None:
    url, manager = serve("wordle")

    async def main() -> tuple[list[str], list[str], str, int]:
        async with http_session(f"{url}/mcp?task_id=test/0003") as session:
            tools = [t.name for t in (await session.list_tools()).tools]
            opening = (await session.read_resource(OPENING_URI)).contents[0].text
            active = manager.active
            return tools, await play_wordle(session), opening, active

    tools, texts, opening, active = run(main())
    assert sorted(tools) == ["get_history", "guess"]  # tools only: no reset, no state
    assert "Correct" in texts[-1] and len(texts) <= 6
    assert "guess" in opening.lower()
    assert active == 1
    eventually(lambda: manager.active == 0, what="the episode closed with its MCP session (DELETE)")


def test_each_mcp_session_owns_its_episode_and_the_task_comes_from_the_url(serve) -> None:
    url, manager = serve("wordle")

    async def main() -> tuple[str, str]:
        async with (
            http_session(f"{url}/mcp?task_id=test/0003") as one,
            http_session(f"{url}/mcp?task_id=test/0004") as two,
        ):
            assert manager.active == 2
            first = (await one.call_tool("guess", {"word": "crane"})).content[0].text
            second = (await two.call_tool("guess", {"word": "crane"})).content[0].text
            history = (await one.call_tool("get_history", {})).content[0].text
            assert "CRANE" in history
            return first, second

    first, second = run(main())
    assert first.split()[1] != second.split()[1]  # different answers, different marks
    eventually(lambda: manager.active == 0)


def test_images_and_tool_errors_map_to_mcp_content(serve) -> None:
    url, _ = serve(Pictures)

    async def main() -> tuple[Any, Any, Any]:
        async with http_session(f"{url}/mcp") as session:
            drawn = await session.call_tool("draw", {})
            failed = await session.call_tool("fail", {})
            unknown = await session.call_tool("nope", {})
            return drawn, failed, unknown

    drawn, failed, unknown = run(main())
    assert drawn.is_error is False
    image, text = drawn.content
    assert image.type == "image" and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == PNG and text.text == "a picture"
    assert drawn.structured_content is None and drawn.meta is None  # reward stays with infrastructure
    assert failed.is_error is True and "cannot do that: try draw" in failed.content[0].text
    assert unknown.is_error is True and "nope" in unknown.content[0].text


def test_a_lone_surrogate_in_a_tool_result_reaches_the_client_as_a_replacement_character(serve) -> None:
    from tests.client.test_unicode import Surrogates

    url, _ = serve(Surrogates)

    async def main() -> tuple[Any, list[Any]]:
        async with http_session(f"{url}/mcp") as session:
            opening = await session.read_resource(OPENING_URI)
            return opening, [await session.call_tool("say", {"text": word}) for word in ("one", "two")]

    opening, results = run(main())
    assert opening.contents[0].text == "ready \ufffd"
    for result, word in zip(results, ("one", "two"), strict=True):
        assert result.is_error is False and result.content[0].text == f"{word} \ufffd"


def test_a_crash_is_an_error_result_saying_the_episode_is_void_then_calls_are_refused(serve) -> None:
    """MCP has no reward to withhold: a void episode is an ``isError`` result that says so, and the
    episode takes no further call (its reward, None, stays with the infrastructure)."""
    url, _ = serve(Crash)

    async def main() -> tuple[Any, Any]:
        async with http_session(f"{url}/mcp") as session:
            return await session.call_tool("boom", {}), await session.call_tool("boom", {})

    crashed, after = run(main())
    assert crashed.is_error is True and "void" in crashed.content[0].text
    assert crashed.structured_content is None and crashed.meta is None
    assert after.is_error is True and after.content[0].text.startswith("EPISODE_OVER:")


def test_tool_result_flags_infrastructure_failures() -> None:
    step = StepResult(Observation(()), failure=Failure("step_timeout", "tool 'x' ran too long"))
    result = tool_result(step)
    assert result.is_error is True and result.content[0].text == "tool 'x' ran too long"


def test_a_bad_task_in_the_url_fails_initialize_and_the_server_lives(serve) -> None:
    url, manager = serve("wordle")

    async def bad() -> None:
        async with http_session(f"{url}/mcp?task_id=nope/1"):
            pass

    with pytest.raises(BaseException) as caught:  # the SDK wraps transport errors in groups
        run(bad())
    assert "wordle has no split 'nope'" in str(leaf(caught.value))  # the client reads why
    with httpx.Client(trust_env=False, timeout=10) as client:
        raw = client.post(
            f"{url}/mcp?task_id=nope/1",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
            headers={"accept": "application/json, text/event-stream"},
        )
        assert raw.status_code == 404
        error = raw.json()["error"]
        assert "no split 'nope'" in error["message"] and error["data"]["code"] == "TASK_ERROR"
        for bad in ("abc", "-3", "%C2%B2"):  # "²" is a digit to str.isdigit; every route refuses a negative seed
            seed = client.post(f"{url}/mcp?seed={bad}", json={"jsonrpc": "2.0", "id": 1, "method": "initialize"})
            assert seed.status_code == 422 and "non-negative integer" in seed.json()["error"]["message"], bad
    assert manager.active == 0

    async def good() -> list[str]:
        async with http_session(f"{url}/mcp?task_id=test/0003") as session:
            return await play_wordle(session)

    assert "Correct" in run(good())[-1]


def test_bad_json_rpc_gets_standard_codes_and_the_server_survives(serve) -> None:
    url, manager = serve("wordle")
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:

        def post(body: bytes | dict, **headers: str) -> httpx.Response:
            if isinstance(body, dict):
                return client.post("/mcp", json=body, headers=headers)
            return client.post("/mcp", content=body, headers={"content-type": "application/json", **headers})

        assert post(b"{not json").json()["error"]["code"] == -32700
        assert post(b"[1, 2]").json()["error"]["code"] == -32600
        assert post({"jsonrpc": "2.0", "id": 1, "method": "no/such"}).json()["error"]["code"] == -32601
        bad_params = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"session_id": "x"}}
        assert post(bad_params).json()["error"]["code"] == -32602
        unknown = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "guess", "arguments": {"word": "crane"}, "session_id": "missing"},
        }
        answer = post(unknown).json()["error"]
        assert answer["code"] == -32602 and "Unknown session_id" in answer["message"]
        stale = post({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, **{"mcp-session-id": "gone"})
        assert stale.status_code == 404  # an unknown MCP session: the client must initialize again
        assert client.put("/mcp").status_code == 405
        assert client.get("/health").json() == {"status": "healthy"}
    assert manager.active == 0


def test_omnienv_mcp_serves_one_episode_over_stdio() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "omnienv.cli.main", "mcp", "wordle", "--task-id", "test/0003"],
    )

    async def main() -> tuple[list[str], str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            assert sorted(tools) == ["get_history", "guess"]
            opening = (await session.read_resource(OPENING_URI)).contents[0].text
            texts = await play_wordle(session)
            after = await session.call_tool("guess", {"word": "crane"})
            return texts, opening, after

    texts, opening, after = run(main())
    assert "Correct" in texts[-1]
    assert "guess" in opening.lower()
    assert after.is_error is True and "EPISODE_OVER" in after.content[0].text


def test_a_full_server_refuses_a_new_mcp_session_with_its_capacity(serve) -> None:
    url, manager = serve("wordle", max_sessions=1)

    async def main() -> str:
        async with http_session(f"{url}/mcp") as first:
            try:
                async with http_session(f"{url}/mcp"):
                    pass
            except BaseException as exc:
                refused = str(leaf(exc))
            else:
                raise AssertionError("a second MCP session was admitted past max_sessions=1")
            assert (await first.call_tool("guess", {"word": "crane"})).is_error is False  # the first lives on
            return refused

    assert "Server at capacity: 1/1" in run(main())
    eventually(lambda: manager.active == 0)


def test_an_idle_mcp_session_is_reaped_and_its_calls_say_why(serve) -> None:
    url, manager = serve("wordle", idle_timeout=0.3)

    async def main() -> Any:
        async with (
            streamable_http_client(f"{url}/mcp", terminate_on_close=False) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert manager.active == 1
            deadline = asyncio.get_running_loop().time() + 10
            while manager.active:  # poll with a deadline; the reaper runs on the server's loop
                assert asyncio.get_running_loop().time() < deadline, "the idle MCP session was not reaped"
                await asyncio.sleep(0.02)
            return await session.call_tool("guess", {"word": "crane"})

    try:
        late = run(main())
    except BaseException as exc:
        assert "Session not found" in str(leaf(exc)) or "404" in str(leaf(exc))
    else:
        assert late.is_error is True and "gone" in late.content[0].text


def test_a_split_and_seed_in_the_url_pick_the_same_task_every_time(serve) -> None:
    url, _ = serve("wordle")

    async def first_marks(query: str) -> str:
        async with http_session(f"{url}/mcp?{query}") as session:
            return (await session.call_tool("guess", {"word": "crane"})).content[0].text

    async def main() -> list[str]:
        return [await first_marks(q) for q in ("split=test&seed=11", "split=test&seed=11", "task_id=test/0003")]

    same, again, other = run(main())
    assert same == again
    assert read_marks(same) is not None and read_marks(other) is not None


def test_every_client_request_is_answered_or_refused_as_the_capabilities_say(serve) -> None:
    """Each request method of the SDK's ``ClientSession``: what the server advertises answers, what it
    does not is MCP's ``Method not found``, and the session plays on after every refusal."""
    from mcp import types
    from mcp.shared.exceptions import MCPError

    url, _ = serve("wordle")

    async def main() -> tuple[Any, dict[str, Any], str]:
        async with http_session(f"{url}/mcp?task_id=test/0003") as session:
            answers: dict[str, Any] = {}
            prompt = types.PromptReference(type="ref/prompt", name="opening")
            requests = {
                "send_ping": session.send_ping,
                "discover": session.discover,
                "list_resources": session.list_resources,
                "read_resource": lambda: session.read_resource(OPENING_URI),
                "list_tools": session.list_tools,
                "list_resource_templates": session.list_resource_templates,
                "list_prompts": session.list_prompts,
                "get_prompt": lambda: session.get_prompt("opening"),
                "complete": lambda: session.complete(prompt, {"name": "word", "value": "cr"}),
            }
            for name, request in requests.items():
                try:
                    answers[name] = await request()
                except MCPError as exc:
                    answers[name] = exc.error.code
            played = (await session.call_tool("guess", {"word": "crane"})).content[0].text
            return session.server_capabilities, answers, played

    capabilities, answers, played = run(main())
    assert capabilities.tools is not None and capabilities.resources is not None
    assert capabilities.prompts is None and capabilities.completions is None
    assert answers["discover"].meta["io.modelcontextprotocol/serverInfo"]["name"] == "wordle"
    assert OPENING_URI in [str(resource.uri) for resource in answers["list_resources"].resources]
    assert "guess" in answers["read_resource"].contents[0].text.lower()
    assert sorted(tool.name for tool in answers["list_tools"].tools) == ["get_history", "guess"]
    not_offered = ("list_resource_templates", "list_prompts", "get_prompt", "complete")
    assert [answers[name] for name in not_offered] == [-32601] * 4  # METHOD_NOT_FOUND, as MCP says
    assert "CRANE" in played
