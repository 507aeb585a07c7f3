"""The calls a capture proxy has recorded, by episode: what a trainer reads while episodes run."""

from __future__ import annotations

import threading
from collections.abc import Callable

from omnienv.capture.calls import ModelCall

__all__ = ["CallLog"]


class CallLog:
    """Finished calls by episode, in the order they finished, each with its ``index`` in its episode.

    Thread-safe: the proxy adds from its server thread while a trainer reads from another.
    ``on_call`` sees each call as it is added (``omnienv proxy --out`` writes it to a file).
    """

    def __init__(self, on_call: Callable[[ModelCall], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str | None, list[ModelCall]] = {}
        self._next: dict[str | None, int] = {}
        self.on_call = on_call

    def add(self, call: ModelCall) -> ModelCall:
        with self._lock:
            call.index = self._next.get(call.episode, 0)
            self._next[call.episode] = call.index + 1
            self._calls.setdefault(call.episode, []).append(call)
        if self.on_call is not None:
            self.on_call(call)
        return call

    def calls(self, episode: str | None) -> list[ModelCall]:
        with self._lock:
            return list(self._calls.get(episode, ()))

    def episodes(self) -> list[str | None]:
        with self._lock:
            return [episode for episode, calls in self._calls.items() if calls]

    def drain(self, episode: str | None) -> list[ModelCall]:
        """Take the episode's calls so far; later calls continue its numbering."""
        with self._lock:
            return self._calls.pop(episode, [])

    def forget(self, episode: str | None) -> None:
        """Drop the episode entirely; a later call with its name starts again at index 0."""
        with self._lock:
            self._calls.pop(episode, None)
            self._next.pop(episode, None)
