"""The viewer's server: one JSONL file (episodes, or a training log), indexed, served a line at a time.

Files from long rollouts hold thousands of episodes with base64 screenshots, so the page gets a
summary per episode (reward, success, failure...) and fetches one whole episode when it is
opened. The index follows the file as it grows, so a rollout or a training run can be watched
while it runs. A training log (``{"kind": "train_step", ...}`` lines) opens on its summary page.

The file may come from anywhere (a hostile trajectory is a test case), so the server answers only
loopback ``Host`` and ``Origin`` headers, like every omnienv server, and its pages run under a
content security policy that allows no inline script; the pages themselves insert the file's
strings as text, never as markup.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from omnienv.server.origins import OriginGuard, check_allowed, refuse
from omnienv.ui.file_summary import TRAIN_STEP, split_of, summarize_episodes, summarize_training
from omnienv.ui.routes import ui_routes

__all__ = ["CONTENT_SECURITY_POLICY", "TrajectoryIndex", "create_viewer_app", "summarize_record"]

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
"""Scripts only from the viewer's own files: a string from the file that became markup still could
not run. Inline styles stay allowed (the pages colour tokens with them); images may be data URLs
(screenshots are base64 in the file)."""


def summarize_record(record: dict[str, Any], index: int, line: int) -> dict[str, Any]:
    """The fields the episode list shows and filters on (no steps, no images)."""
    steps = record.get("steps")
    reward = record.get("reward")
    if not isinstance(reward, int | float) and isinstance(steps, list):
        reward = sum(float(s.get("reward") or 0.0) for s in steps if isinstance(s, dict))
    failure = record.get("failure")
    if failure:  # a void episode has no reward: never shown, averaged or filtered as a score
        reward = None
    return {
        "index": index,
        "line": line,
        "episode": record.get("index"),
        "env": record.get("env"),
        "task_id": record.get("task_id"),
        "split": split_of(record),
        "seed": record.get("seed"),
        "policy": record.get("policy"),
        "reward": float(reward) if isinstance(reward, int | float) else None,
        "success": record.get("success"),
        "done": record.get("done"),
        "truncated": record.get("truncated"),
        "turns": record.get("turns", len(steps) if isinstance(steps, list) else 0),
        "stopped": record.get("stopped"),
        "failure": failure if isinstance(failure, dict) else None,
        "seconds": record.get("seconds"),
    }


@dataclass
class TrajectoryIndex:
    """Byte spans and summaries of the file's episode lines, and its training steps; other lines are
    reported (with their line number) rather than failing the whole file."""

    path: Path
    spans: list[tuple[int, int]] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    train_steps: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    _end: int = 0
    _lines: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self) -> None:
        """Index lines appended since the last call; start over if the file shrank."""
        with self._lock:
            size = self.path.stat().st_size
            if size < self._end:
                self.spans.clear()
                self.summaries.clear()
                self.train_steps.clear()
                self.problems.clear()
                self._end = self._lines = 0
            if size == self._end:
                return
            with self.path.open("rb") as handle:
                handle.seek(self._end)
                position = self._end
                for raw in handle:
                    if not raw.endswith(b"\n"):
                        break  # a line still being written: index it next time
                    self._lines += 1
                    start, position = position, position + len(raw)
                    self._end = position
                    if not raw.strip():
                        continue
                    try:
                        record = _parse(raw)
                    except (ValueError, TypeError) as exc:
                        self.problems.append(f"line {self._lines}: not an episode record ({exc})")
                        continue
                    kind = record.get("kind")
                    if kind == TRAIN_STEP:
                        self.train_steps.append(record)
                    elif isinstance(kind, str) and "steps" not in record:
                        self.problems.append(f"line {self._lines}: a {kind[:40]!r} record, not an episode")
                    else:
                        self.summaries.append(summarize_record(record, len(self.spans), self._lines))
                        self.spans.append((start, len(raw)))

    @property
    def kind(self) -> str:
        """``training`` for a training log (train steps and no episodes), else ``trajectories``."""
        return "training" if self.train_steps and not self.summaries else "trajectories"

    def summary(self) -> dict[str, Any]:
        """The summary page's numbers for what the file holds now."""
        if self.kind == "training":
            return summarize_training(self.train_steps)
        return summarize_episodes(self.summaries)

    def episode(self, index: int) -> bytes:
        start, length = self.spans[index]
        with self.path.open("rb") as handle:
            handle.seek(start)
            return handle.read(length)


def _parse(raw: bytes) -> dict[str, Any]:
    """One JSON object. Python's ``json`` writes NaN and Infinity (a diverged loss, say), which
    strict JSON has no words for, so a line orjson refuses gets a second, lenient reading."""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        record = json.loads(raw)
    if not isinstance(record, dict):
        raise TypeError("not an object")
    return record


class _Guarded:
    """Host and Origin checked on every request (the rules of every omnienv server), and the
    content security policy on every response."""

    def __init__(self, app: Any, guard: OriginGuard) -> None:
        self.app, self.guard = app, guard

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if (refused := self.guard.refusal(scope)) is not None:
            await refuse(scope, receive, send, refused)
            return

        async def send_with_policy(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                headers += [
                    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_policy)


def _json(value: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(value), status, media_type="application/json")


def create_viewer_app(
    path: str | Path, *, allow_hosts: Iterable[str] = (), allow_origins: Iterable[str] = ()
) -> Starlette:
    """``/`` opens the episode list on ``path`` (the summary page, for a training log);
    ``/api/trajectory`` lists the episodes, ``/api/episodes/{n}`` returns episode ``n`` exactly as
    written, ``/api/summary`` the summary page's numbers. ``allow_hosts`` and ``allow_origins``
    widen the loopback-only Host and Origin rules (see :mod:`omnienv.server.origins`)."""
    allow_hosts, allow_origins = tuple(allow_hosts), tuple(allow_origins)
    check_allowed(allow_hosts, allow_origins)  # ValueError naming the bad entry
    source = Path(path)
    if not source.is_file():
        raise FileNotFoundError(f"no trajectory file at {source}: pass a JSONL file written by omnienv rollout/eval")
    index = TrajectoryIndex(source)
    index.refresh()

    async def home(request: Request) -> Response:
        index.refresh()
        page = "summary.html" if index.kind == "training" else "view.html"
        return RedirectResponse(f"/ui/{page}?source=server", status_code=307)

    async def trajectory(request: Request) -> Response:
        index.refresh()
        listing = {"path": source.name, "kind": index.kind, "episodes": index.summaries}
        return _json({**listing, "problems": index.problems[:50]})

    async def summary(request: Request) -> Response:
        index.refresh()
        listing = {"path": source.name, "skipped": len(index.problems), "problems": index.problems[:3]}
        return _json({**index.summary(), **listing})

    async def episode(request: Request) -> Response:
        raw = request.path_params["index"]
        if not raw.isdigit() or int(raw) >= len(index.spans):
            return _json({"error": f"no episode {raw}; this file has {len(index.spans)} (0-based)"}, 404)
        line = index.episode(int(raw))
        if b"NaN" in line or b"Infinity" in line:  # a browser's JSON.parse refuses them: written as null
            line = orjson.dumps(_parse(line))
        return Response(line, media_type="application/json")

    routes = [
        Route("/", home, methods=["GET"]),
        Route("/api/trajectory", trajectory, methods=["GET"]),
        Route("/api/episodes/{index}", episode, methods=["GET"]),
        Route("/api/summary", summary, methods=["GET"]),
        *ui_routes(),
    ]
    guard = OriginGuard(allow_hosts=allow_hosts, allow_origins=allow_origins)
    app = Starlette(routes=routes)
    app.add_middleware(_Guarded, guard=guard)
    app.state.index = index
    app.state.guard = guard  # `serve` and `running` tell it the host they bind
    return app
