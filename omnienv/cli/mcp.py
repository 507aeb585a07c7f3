"""``omnienv mcp ENV``: one episode of ENV as a stdio MCP server (for desktop agents, IDEs...).

The episode is reset once at start (``--task-id``, or ``--split``/``--seed``); the agent sees
the tools and nothing else. The process ends when the client closes stdin.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from omnienv.cli.common import env_class, fail

__all__ = ["mcp"]


def mcp(
    env: Annotated[str, typer.Argument(help="Environment name or 'package.module:Class'")],
    task_id: Annotated[str | None, typer.Option(help="Task to play, e.g. test/0003")] = None,
    split: Annotated[str | None, typer.Option(help="Pick the task from this split (with --seed)")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the episode (and of the task pick)")] = None,
) -> None:
    """Serve one episode of ENV over MCP on stdin/stdout (the official SDK's stdio transport)."""
    cls = env_class(env)
    try:
        import anyio

        from omnienv.server.mcp_sdk import build_server, tool_result  # noqa: F401 - fail early, clearly
    except ImportError as exc:
        raise fail(f"MCP needs the server extra: pip install 'omnienv[server]' ({exc})") from None
    anyio.run(_serve, cls, task_id, split, seed)


async def _serve(cls: Any, task_id: str | None, split: str | None, seed: int | None) -> None:
    from mcp.server.stdio import stdio_server

    from omnienv.core import OmniEnvError, StepResult, ToolCall, as_async
    from omnienv.server.mcp_sdk import build_server

    env = as_async(cls())
    try:
        try:  # the same task choice as a server's reset (split, task id, seed)
            task = cls.task_index().choose(task_id, seed, split)
            first = await env.reset(task, seed)
        except OmniEnvError as exc:
            raise fail(exc.message) from None

        async def run(ctx: Any, call: ToolCall) -> StepResult:
            return await env.step(call)

        server = build_server(cls, run, lambda ctx: first.text)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await env.close()
