"""A stand-in model: an OpenAI-compatible chat server whose replies are the Wordle solver's guesses.

Frameworks that call a model through the ``openai`` client (verifiers' ``vf-eval``, TRL's
vLLM client, our own rollouts) can play Wordle to a win without a GPU or an API key. It speaks
the real ``/v1/chat/completions`` shapes, plain JSON and ``stream=true`` server-sent events
(``chat.completion.chunk`` with tool-call deltas and ``stream_options.include_usage``):

- when the request lists ``tools``, it answers with a ``guess`` tool call;
- without tools, it answers with text, ``<guess>crane</guess>``;
- once an observation says ``Correct!``, it answers with plain text and no call.

It reads the marks of earlier guesses from the conversation (tool or user messages) and asks
:func:`omnienv.envs.wordle.solver.next_guess` for the next word. Standard library only::

    python examples/scripted_openai_server.py --port 8000    # or --port 0 and --port-file F
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from omnienv.envs.wordle.solver import next_guess, read_marks

MODEL = "wordle-solver"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The assistant message the solver sends after ``messages``."""
    history: list[tuple[str, str]] = []
    solved = False
    for message in messages:
        if message.get("role") not in ("tool", "user"):
            continue
        for line in _text(message.get("content")).splitlines():
            marks = read_marks(line.strip())
            if marks:
                history.append(marks)
            solved = solved or "Correct!" in line
    if solved:
        return {"role": "assistant", "content": "Solved."}
    word = next_guess(history)
    names = [tool.get("function", {}).get("name", "") for tool in tools or []]
    name = next((n for n in names if n == "guess" or n.endswith("guess")), None)
    if name is None:
        return {"role": "assistant", "content": f"<guess>{word}</guess>"}
    call = {
        "id": f"call_{uuid.uuid4().hex[:12]}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps({"word": word})},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the frameworks log enough
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "omnienv"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            message = reply(body["messages"], body.get("tools"))
        except (ValueError, KeyError, TypeError) as exc:
            self._json(400, {"error": {"message": f"bad request: {exc}", "type": "invalid_request_error"}})
            return
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        head = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "created": int(time.time()),
            "model": body.get("model") or MODEL,
        }
        if body.get("stream"):
            self._stream(
                head, message, finish, usage if (body.get("stream_options") or {}).get("include_usage") else None
            )
        else:
            self._json(
                200,
                {
                    **head,
                    "object": "chat.completion",
                    "usage": usage,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                },
            )

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, head: dict[str, Any], message: dict[str, Any], finish: str, usage: dict[str, int] | None) -> None:
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        chunk = {**head, "object": "chat.completion.chunk"}
        events = [
            {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        ]
        if usage is not None:
            events.append({**chunk, "choices": [], "usage": usage})
        data = b"".join(f"data: {json.dumps(event)}\n\n".encode() for event in events) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def serving(port: int = 0) -> Iterator[str]:
    """Serve on 127.0.0.1 in a background thread; yields the base URL (``.../v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="scripted-openai", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", type=Path, help="write the chosen port here once listening")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        args.port_file.write_text(str(port))
    print(f"scripted OpenAI-compatible server on http://127.0.0.1:{port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
