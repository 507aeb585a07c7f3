"""Standard MCP for agents: an environment's tools through the official ``mcp`` SDK.

Agents see only tools (``tools/list``, ``tools/call``); reset, state, reward and ``done`` stay
with the infrastructure. :func:`build_server` makes the SDK's low-level server for one
environment class; the streamable HTTP bridge (:class:`McpSdkBridge`, mounted on ``/mcp``) and
the stdio command (``omnienv mcp ENV``) differ only in how a request finds its episode.

The SDK is imported lazily: it takes about a second to import, and a server that nobody talks
MCP to should not pay for it at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from omnienv.core.content import ImageBlock, TextBlock
from omnienv.core.env import EnvironmentBase
from omnienv.core.errors import MessageValidationError, OmniEnvError, SessionError
from omnienv.core.text import valid_text
from omnienv.core.threads import to_blocking_thread
from omnienv.core.types import Observation, StepResult, ToolCall
from omnienv.protocol.codec import encode
from omnienv.protocol.jsonrpc import INVALID_PARAMS, SERVER_ERROR, RpcError, error_response, rpc_error_for
from omnienv.protocol.messages import Reset, parse_reset
from omnienv.server.handler import Handler
from omnienv.server.sessions import MCP, OPERATOR, Session, SessionManager
from omnienv.server.workers import query_session_id

__all__ = ["McpSdkBridge", "build_server", "tool_result"]

logger = logging.getLogger("omnienv.server")
SESSION_HEADER = b"mcp-session-id"
ToolRunner = Callable[[Any, ToolCall], Awaitable[StepResult]]
"""``(request context, call) -> the step's result``."""


def tool_result(result: StepResult) -> Any:
    """One step as an MCP ``CallToolResult``, built straight from its content blocks.

    Text and image blocks map one to one; an error observation or an infrastructure failure
    becomes ``isError: true`` with its message. Reward and ``done`` are left out on purpose. Text
    goes through :func:`~omnienv.core.text.valid_text`: the SDK's encoder refuses a lone surrogate
    (an agent's program printed one), and the whole answer would be lost with it.
    """
    import mcp_types as types

    content: list[Any] = []
    for block in result.observation.content:
        if isinstance(block, ImageBlock):
            data = block.base64
            content.append(types.ImageContent(data=data, mime_type=block.mime_type))
        elif isinstance(block, TextBlock):
            content.append(types.TextContent(text=valid_text(block.text)))
    failure = result.failure
    if failure is not None and not content:
        content.append(types.TextContent(text=valid_text(failure.message)))
    return types.CallToolResult(content=content, is_error=result.observation.is_error or failure is not None)


def error_result(message: str) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(text=valid_text(message))], is_error=True)


OPENING_URI = "omnienv://episode/observation"


def build_server(
    env_class: type[EnvironmentBase], run: ToolRunner, opening: Callable[[Any], str | None] | None = None
) -> Any:
    """The SDK's low-level ``Server`` offering ``env_class``'s tools; ``run`` performs a call.

    ``opening(ctx)`` gives the text of the episode's first observation (the task prompt), served
    as the resource ``omnienv://episode/observation`` so an agent can read what it is asked.
    """
    import mcp_types as types
    from mcp.server.lowlevel import Server

    tools = [
        types.Tool(name=spec.name, description=spec.description, input_schema=spec.parameters)
        for spec in env_class.tools.values()
    ]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        try:
            return tool_result(await run(ctx, ToolCall(params.name, dict(params.arguments or {}))))
        except OmniEnvError as exc:  # not reset, episode over, session gone: the agent reads why
            return error_result(f"{exc.code}: {exc.message}")

    resource = types.Resource(
        uri=OPENING_URI,
        name="observation",
        mime_type="text/plain",
        description="The episode's first observation: what the agent is asked to do.",
    )

    async def list_resources(ctx: Any, params: Any) -> Any:
        # Listed only where it can be read: an agent-only session's MCP session reset nothing.
        there = opening is not None and opening(ctx) is not None
        return types.ListResourcesResult(resources=[resource] if there else [])

    async def read_resource(ctx: Any, params: Any) -> Any:
        from mcp.shared.exceptions import MCPError

        if str(params.uri) != OPENING_URI:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown resource: {params.uri} (resources/list names them)")
        text = opening(ctx) if opening is not None else None
        if text is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"no {OPENING_URI} in this session: its episode was started by the operator, who hands "
                "its first observation to the agent (agent-only mode)",
            )
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=OPENING_URI, mime_type="text/plain", text=valid_text(text))]
        )

    return Server(
        env_class.name,
        version="1.0.0",
        description=env_class.description or None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _query(scope: dict[str, Any]) -> dict[str, str]:
    raw = (scope.get("query_string") or b"").decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw).items()}


def _reset_request(query: dict[str, str]) -> Reset:
    """The query's reset, checked by the rule every route's reset follows (:func:`parse_reset`)."""
    text = query.get("seed")
    if text is not None and not (text.isascii() and text.lstrip("-").isdigit()):
        raise MessageValidationError(f"'seed' must be a non-negative integer, got {text!r}: use /mcp?seed=7")
    seed = int(text) if text is not None else None
    return parse_reset({"seed": seed, "task_id": query.get("task_id"), "split": query.get("split")})


class McpSdkBridge:
    """Streamable HTTP MCP on ``/mcp``: each MCP session owns one omnienv session.

    The session is opened when the client initializes and, in normal mode, reset there to the
    task named by ``/mcp?task_id=...`` (or ``?split=...&seed=...``; else seeded at random). It
    closes when the client ends the MCP session (``DELETE``), when it idles past the server's
    ``idle_timeout``, or at shut-down. In agent-only mode the client names an episode the
    operator started (``/mcp?session_id=...``) and the MCP session only borrows it.
    """

    def __init__(self, manager: SessionManager, handler: Handler) -> None:
        self.manager = manager
        self.handler = handler
        self.bindings = manager.bindings
        """MCP session id -> the session it plays in, with its first observation's text (when it
        was reset at initialize)."""
        self._ready: asyncio.Future[Any] | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None

    # -- the SDK's session manager, started on first use --------------------------------------

    async def _session_manager(self) -> Any:
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._runner = asyncio.get_running_loop().create_task(self._run_sdk())
        return await asyncio.shield(self._ready)

    async def _run_sdk(self) -> None:
        assert self._ready is not None and self._stop is not None
        try:
            module = await to_blocking_thread(importlib.import_module, "mcp.server.streamable_http_manager")
            config = self.manager.config
            sdk = module.StreamableHTTPSessionManager(
                app=build_server(self.manager.env_class, self._run_tool, self._opening),
                stateless=False,
                session_idle_timeout=config.idle_timeout,
                max_sessions=config.max_sessions,
                max_request_body_size=config.max_message_bytes,
            )
            async with sdk.run():
                self._ready.set_result(sdk)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            if not isinstance(exc, Exception):
                raise
            logger.exception("the MCP session manager stopped")

    async def stop(self) -> None:
        if self._runner is None:
            return
        assert self._stop is not None
        self._stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._runner, 10)
        for mcp_id, session, _ in self.bindings.named(MCP):
            self.bindings.unbind(MCP, mcp_id)
            await self.manager.detach(session)

    # -- tool calls -----------------------------------------------------------------------------

    async def _run_tool(self, ctx: Any, call: ToolCall) -> StepResult:
        request = getattr(ctx, "request", None)
        headers = getattr(request, "headers", None)
        mcp_id = headers.get("mcp-session-id") if headers is not None else None
        bound = self.bindings.get(MCP, mcp_id or "")
        if bound is None:
            raise SessionError(
                "this MCP session's episode is gone (closed or reaped after being idle); start a new MCP session"
            )
        result = await self.handler.run(bound[0], call, trusted=True)
        assert isinstance(result, StepResult)
        return result

    def _opening(self, ctx: Any) -> str | None:
        headers = getattr(getattr(ctx, "request", None), "headers", None)
        bound = self.bindings.get(MCP, headers.get("mcp-session-id") or "") if headers is not None else None
        return bound[1] if bound is not None else None

    # -- HTTP ---------------------------------------------------------------------------------

    async def handle(
        self, scope: dict[str, Any], receive: Any, send: Any, body: bytes | None, initialize: bool
    ) -> None:
        """Serve one HTTP request of the MCP transport (``body`` already read for POSTs)."""
        try:
            sdk = await self._session_manager()
        except Exception as exc:
            await _send_rpc_error(
                send,
                RpcError(
                    SERVER_ERROR,
                    f"MCP over streamable HTTP needs the 'mcp' package: pip install 'omnienv[server]' ({exc})",
                ),
                501,
            )
            return
        if body is not None:
            receive = _replay(body, receive)
        if initialize:
            await self._initialize(sdk, scope, receive, send)
            return
        await sdk.handle_request(scope, receive, send)
        if scope["method"] == "DELETE":
            bound = self.bindings.unbind(MCP, _header(scope, SESSION_HEADER) or "")
            if bound is not None:
                await self.manager.detach(bound[0])

    async def _initialize(self, sdk: Any, scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            session, opening = await self._claim(_query(scope), query_session_id(scope))
        except OmniEnvError as exc:
            from omnienv.server.http import status_of

            await _send_rpc_error(send, rpc_error_for(exc), status_of(exc))
            return
        bound: list[str] = []

        async def bind_then_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message.get("status", 500) < 400:
                mcp_id = next(
                    (v.decode("latin-1") for k, v in message.get("headers", ()) if k.lower() == SESSION_HEADER), None
                )
                if mcp_id is not None:  # bound before the client learns the id: no call can race it
                    self.bindings.bind(MCP, mcp_id, session, opening)
                    bound.append(mcp_id)
            await send(message)

        try:
            await sdk.handle_request(scope, receive, bind_then_send)
        finally:
            if not bound:
                await self.manager.detach(session)

    async def _claim(self, query: dict[str, str], session_id: str | None) -> tuple[Session, str | None]:
        """The session a new MCP session plays in (a fresh, reset one, or the operator's named by
        ``session_id``), and the text of its first observation when it was reset here."""
        if self.manager.config.agent_only:
            if not session_id:
                from omnienv.core.errors import AgentOnlyError

                raise AgentOnlyError(
                    "this server is agent-only: connect to the /mcp?session_id=... URL the "
                    "operator got from POST /operator/sessions"
                )
            return self.manager.attach(session_id, OPERATOR), None
        reset = _reset_request(query)
        session = await self.manager.open(owned=True, family=MCP)
        session.attached = True
        try:
            first = await self.handler.run(session, reset, trusted=True)
        except BaseException:
            await self.manager.close(session)
            raise
        assert isinstance(first, Observation)
        return session, first.text


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == name), None)


def _replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that hands the already-read body to the next reader once."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message: dict[str, Any] = await receive()
        return message

    return replay


async def _send_rpc_error(send: Any, error: RpcError, status: int) -> None:
    body = encode(error_response(error))
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
