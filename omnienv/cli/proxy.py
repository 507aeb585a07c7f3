"""``omnienv proxy --upstream URL``: the capture proxy as a server, every finished call a JSON line.

Point a harness's OpenAI base URL at ``http://HOST:PORT/episodes/NAME/v1`` (or send an
``X-Omnienv-Episode`` header) and each model call it makes is recorded with the upstream's exact
token ids and log-probabilities; ``--out`` appends each call, as ``ModelCall.to_dict()``, to a
JSONL file as soon as it finishes, so a trainer can follow the file while episodes run.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Annotated

import typer

from omnienv.capture.calls import ModelCall
from omnienv.cli.common import fail, log_level_option, port_option

__all__ = ["proxy"]


def proxy(
    upstream: Annotated[str, typer.Option(help="The inference server's OpenAI base URL, e.g. http://host:8000/v1")],
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: Annotated[int, port_option("TCP port (0: a free one, printed)")] = 8100,
    out: Annotated[Path | None, typer.Option(help="Append each finished call to this JSONL file")] = None,
    request_tokens: Annotated[
        bool,
        typer.Option(
            "--request-tokens/--no-request-tokens",
            help="Ask the upstream for token ids and log-probabilities (vLLM's fields); off for one that rejects them",
        ),
    ] = True,
    timeout: Annotated[float, typer.Option(min=0.001, help="Seconds to wait for the upstream's answer")] = 600.0,
    log_level: Annotated[str, log_level_option()] = "warning",
) -> None:
    """Serve the capture proxy in front of UPSTREAM until interrupted."""
    if not upstream.startswith(("http://", "https://")):
        raise fail(f"--upstream must be an http(s) URL, got {upstream!r}")
    try:
        import json

        import orjson
        import uvicorn

        from omnienv.capture.app import SERVER_OPTIONS
        from omnienv.capture.log import CallLog
        from omnienv.capture.proxy import create_proxy_app
        from omnienv.server.run import uvicorn_config
    except ImportError as exc:
        raise fail(f"the proxy needs the server extra: pip install 'omnienv[server]' ({exc})") from None

    lock = threading.Lock()
    sink = out.open("ab") if out is not None else None

    def write(call: ModelCall) -> None:
        assert sink is not None
        try:
            line = orjson.dumps(call) + b"\n"  # orjson writes the dataclass as to_dict() would, without copying it
        except TypeError:  # a lone surrogate escape the proxy read leniently: written escaped, as it came
            line = json.dumps(call.to_dict()).encode() + b"\n"
        with lock:
            sink.write(line)
            sink.flush()

    log = CallLog(write if sink is not None else None)
    try:
        app = create_proxy_app(upstream, log, request_tokens=request_tokens, timeout=timeout)
    except ValueError as exc:  # an upstream URL without a host
        raise fail(str(exc)) from None
    # Bound here, before the line is printed: whoever reads the address can connect at once.
    try:
        listener = socket.create_server((host, port), backlog=4096)
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = listener.getsockname()[1]
    written = f", each call appended to {out}" if out is not None else ""
    typer.echo(f"capture proxy for {upstream} at http://{host}:{bound}/v1 (episodes: /episodes/NAME/v1){written}")
    try:
        uvicorn.Server(uvicorn_config(app, host, bound, log_level=log_level, **SERVER_OPTIONS)).run(sockets=[listener])
    finally:
        listener.close()
        if sink is not None:
            sink.close()
