"""The server side of one session as an explicit state machine, with no I/O.

::

    NEW --reset--> ACTIVE --step (hung past the deadline)--> FAILED --reset--> ACTIVE
      any state --close--> CLOSED

Orthogonally a session is *busy* while one request runs: a second request on the same session
(two HTTP calls racing) is refused instead of interleaving inside the environment. Every
transition is checked here, once, with errors that name the expected call.
"""

from __future__ import annotations

from enum import Enum

from omnienv.core.errors import EpisodeOverError, SessionError, SessionNotFoundError
from omnienv.core.types import Failure, ToolCall
from omnienv.protocol.messages import End, Request, Reset

__all__ = ["SessionMachine", "SessionState"]


class SessionState(Enum):
    NEW = "new"
    ACTIVE = "active"
    FAILED = "failed"
    CLOSED = "closed"


# Module constants: reading a member off an Enum class goes through the enum machinery (about
# 0.1 µs on CPython 3.11), and every request of every session checks the state.
_NEW, _ACTIVE, _FAILED, _CLOSED = SessionState.NEW, SessionState.ACTIVE, SessionState.FAILED, SessionState.CLOSED


class SessionMachine:
    __slots__ = ("busy", "failure", "state")

    def __init__(self) -> None:
        self.state = _NEW
        self.busy = False
        self.failure: Failure | None = None

    def begin(self, request: Request) -> None:
        """Admit ``request`` or raise; pair every successful call with :meth:`end`."""
        state = self.state
        if state is _CLOSED:
            raise SessionNotFoundError("this session is closed; open a new one")
        if self.busy:
            raise SessionError("the session is busy with another request; send one request at a time")
        if state is _FAILED and isinstance(request, ToolCall | End):
            reason = self.failure.message if self.failure else "it failed"
            raise EpisodeOverError(f"the episode was stopped ({reason}); call reset() to start another")
        self.busy = True

    def end(self, request: Request, ok: bool = True) -> None:
        self.busy = False
        if ok and type(request) is Reset and self.state is not _CLOSED:
            self.state = _ACTIVE
            self.failure = None

    def fail(self, failure: Failure) -> None:
        """The environment can no longer be trusted (a step hung): only reset may follow."""
        if self.state is not _CLOSED:
            self.state = _FAILED
            self.failure = failure

    def close(self) -> None:
        self.state = _CLOSED

    @property
    def needs_fresh_env(self) -> bool:
        return self.state is _FAILED
