"""The calls a capture proxy has recorded, by episode: what a trainer reads while episodes run."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable

from omnienv.capture.calls import ModelCall

__all__ = ["CallLog"]


class CallLog:
    """Finished calls by episode, in the order they finished, each with its ``index`` in its episode.

    Thread-safe: the proxy adds from its server thread while a trainer reads from another.
    ``on_call`` sees each call as it is added (``omnienv proxy --out`` writes it to a file).

    A ``gated`` log serves only episodes that were opened (:meth:`open`), each through a secret key
    in its URL: a client that knows another episode's name, or guesses it, can neither add calls to
    it nor reach the upstream through it, and a closed episode's key is refused.
    """

    def __init__(self, on_call: Callable[[ModelCall], None] | None = None, *, gated: bool = False) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str | None, list[ModelCall]] = {}
        self._next: dict[str | None, int] = {}
        self._keys: dict[str, str] = {}
        self._failed: dict[str | None, str] = {}
        self.on_call = on_call
        self.gated = gated

    def open(self, episode: str) -> str:
        """A new secret key that names ``episode`` (in a URL or the header) until :meth:`close`."""
        key = secrets.token_urlsafe(24)
        with self._lock:
            self._keys[key] = episode
        return key

    def close(self, episode: str) -> None:
        """Refuse the episode's keys from now on, and record none of its calls still running; the
        calls already recorded stay for :meth:`drain`."""
        with self._lock:
            self._keys = {key: name for key, name in self._keys.items() if name != episode}

    def episode_of(self, named: str | None) -> str | None:
        """The episode a call that names ``named`` belongs to: ``named`` itself, or in a gated log
        the episode its key was opened for. Raises ``LookupError`` for a gated log's unknown key."""
        if not self.gated:
            return named
        with self._lock:
            episode = self._keys.get(named) if named is not None else None
        if episode is None:
            raise LookupError(named)
        return episode

    def add(self, call: ModelCall) -> ModelCall | None:
        """Record ``call``; a gated log drops (None) a call whose episode was closed while it ran."""
        with self._lock:
            if self.gated and call.episode not in self._keys.values():
                return None
            self._failed.pop(call.episode, None)
            call.index = self._next.get(call.episode, 0)
            self._next[call.episode] = call.index + 1
            self._calls.setdefault(call.episode, []).append(call)
        if self.on_call is not None:
            self.on_call(call)
        return call

    def fail(self, episode: str | None, why: str) -> None:
        """The model server failed one of the episode's calls (it could not be reached, timed out,
        answered 5xx or 429, or failed a stream): the harness got an error where its model's answer
        should have been."""
        with self._lock:
            if not self.gated or episode in self._keys.values():
                self._failed[episode] = why

    def failure(self, episode: str | None) -> str | None:
        """Why the model server failed the episode's last call; None when that call was recorded
        (or none failed). A harness that stopped right after such a failure stopped for it."""
        with self._lock:
            return self._failed.get(episode)

    def calls(self, episode: str | None) -> list[ModelCall]:
        with self._lock:
            return list(self._calls.get(episode, ()))

    def episodes(self) -> list[str | None]:
        with self._lock:
            return [episode for episode, calls in self._calls.items() if calls]

    def drain(self, episode: str | None) -> list[ModelCall]:
        """Take the episode's calls so far (and forget its failure); later calls continue its numbering."""
        with self._lock:
            self._failed.pop(episode, None)
            return self._calls.pop(episode, [])

    def forget(self, episode: str | None) -> None:
        """Drop the episode entirely; a later call with its name starts again at index 0."""
        with self._lock:
            self._calls.pop(episode, None)
            self._next.pop(episode, None)
            self._failed.pop(episode, None)
