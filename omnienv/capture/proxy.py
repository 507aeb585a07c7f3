"""An OpenAI-compatible capture proxy: forwards a harness's model calls and records their tokens.

A loop-owning agent makes its own model calls; pointing its base URL at this proxy is all it takes
to have every call recorded as a :class:`~omnienv.capture.calls.ModelCall` with the exact token
ids and log-probabilities the inference server produced (see :mod:`omnienv.capture.wire` for
which fields are asked for and taken out again). Calls belong to an episode named in the base URL
(``/episodes/{episode}/v1``) or in an ``X-Omnienv-Episode`` header, so the harness needs no change.

The proxy never tokenises: when the upstream returns no ids, the record says so in ``missing``.
An upstream error passes through with its status and is not recorded; an upstream that cannot be
reached, or sends an answer the proxy cannot read, gets a 502 (a timeout a 504) that says which
upstream it was and what went wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from urllib.parse import quote

from omnienv.capture.app import EPISODE_HEADER, SERVER_OPTIONS, ProxyApp
from omnienv.capture.calls import ModelCall
from omnienv.capture.log import CallLog

__all__ = ["EPISODE_HEADER", "CaptureProxy", "ProxyApp", "create_proxy_app"]


def create_proxy_app(
    upstream: str, log: CallLog, *, request_tokens: bool = True, timeout: float = 600.0, connections: int = 1024
) -> ProxyApp:
    """The proxy as an ASGI app. ``upstream`` is the base URL a client would use (``.../v1``, or
    the server root). ``request_tokens=False`` forwards bodies unchanged, for an upstream that
    rejects vLLM's fields; the records then hold whatever token fields the harness asked for.
    ``timeout`` bounds each exchange with the upstream (connecting: 10 s at most);
    ``connections`` bounds the connections kept open to it."""
    return ProxyApp(upstream, log, request_tokens=request_tokens, timeout=timeout, connections=connections)


class CaptureProxy(AbstractContextManager["CaptureProxy"]):
    """The capture proxy served on ``host`` (a free port) for as long as the ``with`` block runs.

    ``with CaptureProxy("http://127.0.0.1:8000/v1") as proxy:`` then point a harness at
    ``proxy.episode_url("ep-1")`` and read ``proxy.calls("ep-1")`` when it is done.
    ``gated=True`` serves only the episodes opened with :meth:`open_episode`, each on a secret URL:
    for harnesses that must not reach one another's episodes.
    """

    def __init__(
        self,
        upstream: str,
        *,
        host: str = "127.0.0.1",
        request_tokens: bool = True,
        timeout: float = 600.0,
        on_call: Callable[[ModelCall], None] | None = None,
        gated: bool = False,
    ) -> None:
        self.upstream = upstream
        self.host = host
        self.log = CallLog(on_call, gated=gated)
        self.app = create_proxy_app(upstream, self.log, request_tokens=request_tokens, timeout=timeout)
        self._serving: AbstractContextManager[str] | None = None
        self._url: str | None = None

    def __enter__(self) -> CaptureProxy:
        from omnienv.server import running

        self._serving = running(self.app, self.host, **SERVER_OPTIONS)
        self._url = self._serving.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        serving, self._serving, self._url = self._serving, None, None
        if serving is not None:
            serving.__exit__(kind, error, trace)

    @property
    def url(self) -> str:
        """The proxy's root (``http://127.0.0.1:PORT``)."""
        if self._url is None:
            raise RuntimeError("the capture proxy is not running: use it in a `with` block")
        return self._url

    @property
    def base_url(self) -> str:
        """The OpenAI base URL for calls that name their episode in a header (or none)."""
        return f"{self.url}/v1"

    def episode_url(self, episode: str) -> str:
        """The OpenAI base URL whose calls all belong to ``episode``."""
        return f"{self.url}/episodes/{quote(episode, safe='')}/v1"

    def open_episode(self, episode: str) -> str:
        """A secret OpenAI base URL whose calls all belong to ``episode``, until :meth:`close_episode`.

        With ``gated=True`` these are the only URLs served: another client that knows (or guesses)
        the episode's name reaches nothing, and nothing more is recorded for it once it is closed."""
        return self.episode_url(self.log.open(episode))

    def close_episode(self, episode: str) -> None:
        """Refuse ``episode``'s URL from now on (its recorded calls stay for :meth:`drain`)."""
        self.log.close(episode)

    def calls(self, episode: str | None) -> list[ModelCall]:
        return self.log.calls(episode)

    def drain(self, episode: str | None) -> list[ModelCall]:
        return self.log.drain(episode)

    def forget(self, episode: str | None) -> None:
        self.log.forget(episode)

    def episodes(self) -> list[str | None]:
        return self.log.episodes()
