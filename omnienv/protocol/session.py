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


class SessionMachine:
    __slots__ = ("busy", "failure", "state")

    def __init__(self) -> None:
        self.state = SessionState.NEW
        self.busy = False
        self.failure: Failure | None = None

    def begin(self, request: Request) -> None:
        """Admit ``request`` or raise; pair every successful call with :meth:`end`."""
        if self.state is SessionState.CLOSED:
            raise SessionNotFoundError("this session is closed; open a new one")
        if self.busy:
            raise SessionError("the session is busy with another request; send one request at a time")
        if self.state is SessionState.FAILED and isinstance(request, ToolCall | End):
            reason = self.failure.message if self.failure else "it failed"
            raise EpisodeOverError(f"the episode was stopped ({reason}); call reset() to start another")
        self.busy = True

    def end(self, request: Request, ok: bool = True) -> None:
        self.busy = False
        if ok and isinstance(request, Reset) and self.state is not SessionState.CLOSED:
            self.state = SessionState.ACTIVE
            self.failure = None

    def fail(self, failure: Failure) -> None:
        """The environment can no longer be trusted (a step hung): only reset may follow."""
        if self.state is not SessionState.CLOSED:
            self.state = SessionState.FAILED
            self.failure = failure

    def close(self) -> None:
        self.state = SessionState.CLOSED

    @property
    def needs_fresh_env(self) -> bool:
        return self.state is SessionState.FAILED
