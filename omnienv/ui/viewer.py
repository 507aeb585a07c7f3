"""The trajectory viewer's server: one JSONL file of episodes, indexed, served a line at a time.

Files from long rollouts hold thousands of episodes with base64 screenshots, so the page gets a
summary per episode (reward, success, failure...) and fetches one whole episode when it is
opened. The index follows the file as it grows, so a rollout can be watched while it runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from omnienv.ui.routes import ui_routes

__all__ = ["TrajectoryIndex", "create_viewer_app", "summarize_record"]


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
    """Byte spans and summaries of the file's episode lines; lines that are not episodes are
    reported (with their line number) rather than failing the whole file."""

    path: Path
    spans: list[tuple[int, int]] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
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
                        record = orjson.loads(raw)
                        if not isinstance(record, dict):
                            raise TypeError("not an object")
                    except (orjson.JSONDecodeError, TypeError) as exc:
                        self.problems.append(f"line {self._lines}: not an episode record ({exc})")
                        continue
                    self.summaries.append(summarize_record(record, len(self.spans), self._lines))
                    self.spans.append((start, len(raw)))

    def episode(self, index: int) -> bytes:
        start, length = self.spans[index]
        with self.path.open("rb") as handle:
            handle.seek(start)
            return handle.read(length)


def _json(value: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(value), status, media_type="application/json")


def create_viewer_app(path: str | Path) -> Starlette:
    """``/`` opens the viewer on ``path``; ``/api/trajectory`` lists it, ``/api/episodes/{n}``
    returns episode ``n`` exactly as written."""
    source = Path(path)
    if not source.is_file():
        raise FileNotFoundError(f"no trajectory file at {source}: pass a JSONL file written by omnienv rollout/eval")
    index = TrajectoryIndex(source)
    index.refresh()

    async def home(request: Request) -> Response:
        return RedirectResponse("/ui/view.html?source=server", status_code=307)

    async def trajectory(request: Request) -> Response:
        index.refresh()
        return _json({"path": source.name, "episodes": index.summaries, "problems": index.problems[:50]})

    async def episode(request: Request) -> Response:
        raw = request.path_params["index"]
        if not raw.isdigit() or int(raw) >= len(index.spans):
            return _json({"error": f"no episode {raw}; this file has {len(index.spans)} (0-based)"}, 404)
        return Response(index.episode(int(raw)), media_type="application/json")

    routes = [
        Route("/", home, methods=["GET"]),
        Route("/api/trajectory", trajectory, methods=["GET"]),
        Route("/api/episodes/{index}", episode, methods=["GET"]),
        *ui_routes(),
    ]
    app = Starlette(routes=routes)
    app.state.index = index
    return app
