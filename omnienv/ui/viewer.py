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
import re
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
from omnienv.ui.file_summary import (
    TRAIN_STEP,
    number,
    split_of,
    summarize_episodes,
    summarize_training,
    text,
    training_row,
    whole,
)
from omnienv.ui.routes import CONTENT_SECURITY_POLICY, SecurityHeaders, ui_routes

__all__ = ["CONTENT_SECURITY_POLICY", "MAX_LINE_BYTES", "TrajectoryIndex", "create_viewer_app", "summarize_record"]

MAX_LINE_BYTES = 256 * 2**20
"""A longer line is skipped and reported, never read whole: a multi-gigabyte line (a JSON array
instead of JSONL, say) would otherwise be held in memory at once."""
KEPT_PROBLEMS = 100
"""Problems kept for the report (the page shows the first 50); the rest are only counted."""
_CHUNK = 2**20
_MAX_MESSAGE = 2000
_INDEX = re.compile(r"[0-9]{1,9}")
"""An episode number in a URL: ASCII digits only (``str.isdigit`` takes "²", which ``int`` refuses),
and few of them (``int`` refuses strings over 4,300 digits)."""
_EXCEPTIONS = (ValueError, TypeError, RecursionError, OverflowError)
"""What reading a hostile line can raise: bad JSON, not an object, nesting deeper than the parser's
stack, a number no float holds."""


def summarize_record(record: dict[str, Any], index: int, line: int) -> dict[str, Any]:
    """The fields the episode list shows and filters on (no steps, no images), typed and bounded:
    strings cut to ``MAX_TEXT``, numbers finite or None, flags booleans or None, nothing nested but
    a failure's kind and message. The file is hostile, and the list carries a summary of every
    episode: one odd value (a lone surrogate, a list 300 deep, a 1e300 turn count, megabytes in
    ``stopped``) must not break or bloat it for the whole file."""
    steps = record.get("steps")
    written = record.get("reward")
    reward = number(written)
    if not isinstance(written, int | float) and isinstance(steps, list):
        # no reward written: the steps' rewards, counting only real numbers (a "high" is no score)
        rewards = (number(s.get("reward")) for s in steps if isinstance(s, dict))
        reward = number(sum(r for r in rewards if r is not None))
    failure = record.get("failure")
    if failure:  # a void episode has no reward: never shown, averaged or filtered as a score
        reward = None
    seed = record.get("seed")
    return {
        "index": index,
        "line": line,
        "episode": whole(record.get("index"), 2**53),
        "env": text(record.get("env")),
        "task_id": text(record.get("task_id")),
        "split": text(split_of(record)),
        "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) and abs(seed) < 2**53 else text(seed),
        "policy": text(record.get("policy")),
        "reward": reward,
        "success": _flag(record.get("success")),
        "done": _flag(record.get("done")),
        "truncated": _flag(record.get("truncated")),
        "turns": whole(record["turns"]) if "turns" in record else len(steps) if isinstance(steps, list) else 0,
        "stopped": text(record.get("stopped")),
        "failure": _failure(failure),
        "seconds": number(record.get("seconds")),
    }


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _failure(failure: Any) -> dict[str, str] | None:
    """``{kind, message}`` as short strings; a failure that is not an object still marks the episode
    failed (its reward is void), with its text as the message when it is one."""
    if not failure:
        return None
    if isinstance(failure, dict):
        kind, message = text(failure.get("kind")), text(failure.get("message"), _MAX_MESSAGE)
        return {"kind": kind or "?", "message": message or ""}
    return {"kind": "?", "message": text(failure, _MAX_MESSAGE) or ""}


@dataclass
class TrajectoryIndex:
    """Byte spans and summaries of the file's episode lines, and its training steps; other lines are
    reported (with their line number) rather than failing the whole file.

    The file is scanned once, in chunks, however it grows: ``_end`` is where the line not yet
    indexed starts and ``_scanned`` how far it is known to hold no newline, so a last line still
    being written (or a huge one with no newline at all) is neither re-read on every request nor
    held in memory; a line over ``max_line`` bytes is skipped and reported without being read."""

    path: Path
    max_line: int = MAX_LINE_BYTES
    spans: list[tuple[int, int]] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    train_steps: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """The first :data:`KEPT_PROBLEMS` problems (a file of junk would otherwise fill the memory with them)."""
    problem_count: int = 0
    _end: int = 0
    _scanned: int = 0
    _lines: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self) -> None:
        """Index lines appended since the last call; start over if the file shrank."""
        with self._lock:
            size = self.path.stat().st_size
            if size < self._scanned:
                self.spans.clear()
                self.summaries.clear()
                self.train_steps.clear()
                self.problems.clear()
                self._end = self._scanned = self._lines = self.problem_count = 0
            if size == self._scanned:
                return
            with self.path.open("rb") as handle:
                handle.seek(self._scanned)
                while chunk := handle.read(_CHUNK):
                    base, at = self._scanned, 0
                    while (newline := chunk.find(b"\n", at)) >= 0:
                        stop = base + newline + 1
                        if stop - self._end > self.max_line:
                            raw = None
                        elif self._end >= base:
                            raw = chunk[self._end - base : newline + 1]
                        else:  # the line began in an earlier chunk (or an earlier call)
                            handle.seek(self._end)
                            raw = handle.read(stop - self._end)
                            handle.seek(base + len(chunk))
                        self._lines += 1
                        self._index(raw, self._end, stop - self._end)
                        self._end, at = stop, newline + 1
                    self._scanned = base + len(chunk)

    def _index(self, raw: bytes | None, start: int, length: int) -> None:
        """One whole line: an episode (its span and summary), a training step, or a problem. Nothing
        a line holds can raise out of here: it would stop ``omnienv view`` from starting, or make
        the request that met it fail and the line vanish unreported."""
        if raw is None:
            self._problem(f"longer than {self.max_line:,} bytes, skipped")
            return
        if not raw.strip():
            return
        try:
            record = _parse(raw)
            kind = record.get("kind")
            if kind == TRAIN_STEP:
                self.train_steps.append(training_row(record))
            elif isinstance(kind, str) and "steps" not in record:
                self._problem(f"a {text(kind, 40)!r} record, not an episode")
            else:
                self.summaries.append(summarize_record(record, len(self.spans), self._lines))
                self.spans.append((start, length))
        except _EXCEPTIONS as exc:
            self._problem(f"not an episode record ({text(str(exc))})")

    def _problem(self, what: str) -> None:
        self.problem_count += 1
        if len(self.problems) < KEPT_PROBLEMS:
            self.problems.append(f"line {self._lines}: {what}")

    def pending(self) -> str | None:
        """The last line, when it has no newline yet (a rollout still writing it): not read until it
        ends, and said, so a file that is one endless line does not just show nothing."""
        if self._scanned <= self._end:
            return None
        size = self._scanned - self._end
        if size > self.max_line:
            return f"line {self._lines + 1}: longer than {self.max_line:,} bytes and not ended, skipped"
        return f"line {self._lines + 1}: not ended yet ({size:,} bytes), read once its newline is written"

    def report(self, most: int) -> list[str]:
        """The first ``most`` problems, and the unended last line if there is one."""
        tail = self.pending()
        return self.problems[:most] + ([tail] if tail else [])

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
    strict JSON has no words for, and reads a lone surrogate escape, which orjson refuses; so a line
    orjson refuses gets a second, lenient reading. Nesting past orjson's 1,024 levels fails that
    one too, as a ``RecursionError`` (the C parser counts its depth): the caller reports it."""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        record = json.loads(raw)
    if not isinstance(record, dict):
        raise TypeError("not an object")
    return record


class _Guarded:
    """Host and Origin checked on every request (the rules of every omnienv server), and the
    security headers of the ``/ui`` pages (``SecurityHeaders``) on every response."""

    def __init__(self, app: Any, guard: OriginGuard) -> None:
        self.app, self.guard = SecurityHeaders(app), guard

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (refused := self.guard.refusal(scope)) is not None:
            await refuse(scope, receive, send, refused)
            return
        await self.app(scope, receive, send)


def _json(value: Any, status: int = 200) -> Response:
    """orjson's JSON; a value it refuses (a lone surrogate or an int past 64 bits from the lenient
    reading, nesting past its 254 levels) is cleaned by ``_plain`` first rather than failing."""
    try:
        body = orjson.dumps(value)
    except orjson.JSONEncodeError:
        body = orjson.dumps(_plain(value))
    return Response(body, status, media_type="application/json")


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` as orjson writes it: strings valid UTF-8, ints within 64 bits (else a float or
    text), NaN and infinities null, and nesting past 200 levels cut to a short text."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**63 else number(value)  # a float, or null past a float's range
    if isinstance(value, float):
        return number(value)
    if depth >= 200:
        return "…"
    if isinstance(value, dict):
        return {_plain(str(key)): _plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item, depth + 1) for item in value]
    return text(str(value))


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
        return _json({**listing, "problems": index.report(50)})

    async def summary(request: Request) -> Response:
        index.refresh()
        skipped = index.problem_count + (index.pending() is not None)
        listing = {"path": source.name, "skipped": skipped, "problems": index.report(3)}
        return _json({**index.summary(), **listing})

    async def episode(request: Request) -> Response:
        raw = request.path_params["index"]
        if not _INDEX.fullmatch(raw) or int(raw) >= len(index.spans):
            shown = text(raw, 40)
            return _json({"error": f"no episode {shown}; this file has {len(index.spans)} (0-based)"}, 404)
        line = index.episode(int(raw))
        if b"NaN" in line or b"Infinity" in line:  # a browser's JSON.parse refuses them: written as null
            try:
                return _json(_parse(line))
            except _EXCEPTIONS:  # the file was rewritten under the index since
                return _json({"error": f"episode {raw} changed on disk; reload the list"}, 409)
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
