"""``python -m omnienv.app ENV [--host H] [--port P] ...``: the lean way to start a server.

The same options as ``omnienv serve``, without loading the rest of the command line's stack, so
a server is healthy as soon as possible (process start-up counts when sessions are scaled out).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from functools import partial

from omnienv.app import create_app
from omnienv.core.errors import OmniEnvError, WorkerLostError
from omnienv.core.registry import load_environment
from omnienv.server.config import (
    IDLE_TIMEOUT,
    LOG_LEVELS,
    MAX_SESSIONS,
    STEP_TIMEOUT,
    WORKER_STALL_TIMEOUT,
    ServerConfig,
    needs_server_extra,
)
from omnienv.server.origins import WILDCARDS
from omnienv.server.run import serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m omnienv.app", description=__doc__.split("\n")[0])
    parser.add_argument("env", help="environment name or 'package.module:Class'")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=_port, default=8000, help="TCP port (0: any free one)")
    parser.add_argument("--max-sessions", type=int, default=MAX_SESSIONS, help="all workers together")
    parser.add_argument(
        "--workers", type=int, default=1, help="worker processes on the one port; each session lives on one"
    )
    parser.add_argument(
        "--worker-stall-timeout",
        type=float,
        default=WORKER_STALL_TIMEOUT,
        help="seconds a worker's event loop may not answer before the server stops; 0 disables",
    )
    parser.add_argument("--idle-timeout", type=float, default=IDLE_TIMEOUT, help="seconds; 0 disables")
    parser.add_argument("--step-timeout", type=float, default=STEP_TIMEOUT, help="seconds; 0 disables")
    parser.add_argument("--log-level", default="warning", choices=LOG_LEVELS)
    parser.add_argument(
        "--agent-only",
        action="store_true",
        help="tools over MCP only; episodes start at POST /operator/sessions (token printed)",
    )
    parser.add_argument("--operator-token", default=os.environ.get("OMNIENV_OPERATOR_TOKEN"))
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="also answer this Host (repeatable; '*': any); loopback and the bound host always are",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also let pages from this origin call the server (repeatable; '*': any)",
    )
    args = parser.parse_args(argv)
    token = (args.operator_token or secrets.token_urlsafe(24)) if args.agent_only else None
    try:
        config = ServerConfig(
            max_sessions=args.max_sessions,
            idle_timeout=args.idle_timeout or None,
            step_timeout=args.step_timeout or None,
            worker_stall_timeout=args.worker_stall_timeout or None,
            agent_only=args.agent_only,
            operator_token=token,
            allow_hosts=tuple(args.allow_host),
            allow_origins=tuple(args.allow_origin),
        )
        if args.workers != 1:  # imported only then: one process starts as fast as before
            from omnienv.server.supervisor import check_workers

            check_workers(args.workers, config)
    except ValueError as exc:
        parser.error(str(exc))
    if token is not None:
        print(f"agent-only: operator token {token}", file=sys.stderr, flush=True)
    if args.host.strip().lower() in WILDCARDS and not args.allow_host:
        print(
            f"bound to {args.host}: only requests whose Host is a loopback name are answered; pass --allow-host "
            "NAME for each name clients use to reach this machine",
            file=sys.stderr,
            flush=True,
        )
    try:
        cls = load_environment(args.env)  # an unknown name fails here, once, not in every worker
    except OmniEnvError as exc:
        parser.exit(2, f"error: {exc.message}\n")
    if args.workers == 1:
        try:
            app = create_app(cls, config)
        except ImportError as exc:  # the routes' own dependencies are imported as the app is assembled
            parser.exit(2, f"error: {needs_server_extra(exc)}\n")
        serve(app, args.host, args.port, log_level=args.log_level)
        return
    from omnienv.server.supervisor import bind, serve_workers

    sock = bind(args.host, args.port)
    port = sock.getsockname()[1]
    print(f"serving on http://{args.host}:{port} with {args.workers} workers", file=sys.stderr, flush=True)
    try:
        serve_workers(partial(create_app, args.env), config, sock, args.workers, log_level=args.log_level)
    except WorkerLostError as exc:
        sys.exit(f"error: {exc.message}")
    finally:
        sock.close()


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:  # a socket would wrap 70000 around to 4464
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0 to 65535; 0: any free one)")
    return int(text)


if __name__ == "__main__":
    main()
