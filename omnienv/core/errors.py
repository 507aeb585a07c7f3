"""The one exception tree of omnienv.

Every error carries a stable wire ``code`` so that any transport can turn it into a frame and any
client can turn the frame back into the same class (the table lives in ``omnienv.protocol``).

::

    OmniEnvError
    ├── EnvironmentDefinitionError   the environment class itself is wrong (raised at import)
    ├── UnknownEnvironmentError      no environment registered under that name
    ├── TaskError                    bad task or split name
    ├── UsageError                   the infrastructure called things in the wrong order
    │   ├── NotResetError            step/state before the first reset
    │   ├── EpisodeOverError         step after the episode ended
    │   ├── AgentOnlyError           reset/step/state on an agent-only server (AGENT_ONLY)
    │   ├── InvalidTypeError         an argument of the wrong type (also a TypeError)
    │   └── InvalidValueError        an argument or setting out of its range (also a ValueError)
    ├── ActionError                  the agent's tool call was wrong; becomes an error observation
    │   ├── UnknownToolError
    │   ├── InvalidArgumentsError
    │   └── ToolError                raised by a tool to tell the agent what went wrong
    ├── AgentCausedEnd               the agent's own actions ended the episode inside its limits
    ├── ProtocolError                a frame broke the wire protocol; the session survives it
    │   ├── InvalidJSONError         not JSON                     (INVALID_JSON)
    │   ├── UnknownMessageError      unknown message type         (UNKNOWN_TYPE)
    │   ├── MessageValidationError   fields of the wrong shape    (VALIDATION_ERROR)
    │   └── MessageTooLargeError     frame or body over the limit (MESSAGE_TOO_LARGE)
    ├── SessionError                 the session cannot serve this request (SESSION_ERROR)
    │   ├── CapacityError            the server is full           (CAPACITY_REACHED)
    │   ├── SessionNotFoundError     no session with that id (closed, reaped or never made)
    │   └── SessionLostError         the connection died; the session is gone
    └── EnvironmentFailure           infrastructure broke (crash, timeout): flagged, never scored
        ├── StepTimeoutError         a step overran the server's per-step deadline
        └── WorkerLostError          the worker hosting the session died (WORKER_LOST)

Agent mistakes (``ActionError``) never end a session: ``step`` returns them as an error
observation, so the model can read and recover. Everything else is raised to the caller.

Failure attribution is one rule (:func:`omnienv.core.env.EnvironmentBase.step` applies it):
``EnvironmentFailure`` (the sandbox could not start, the server's bug, a lost connection, the host
killing a sandbox that stayed inside its limits) flags the episode and trainers mask it;
``AgentCausedEnd`` (the agent's code killed its kernel, it hit its memory, time or output limit)
ends the episode as an ordinary outcome, scored by the rubric, with ``info["ended_by_agent"]``
saying why. Any other exception from a tool is the environment's bug, hence a failure.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "ActionError",
    "AgentCausedEnd",
    "AgentOnlyError",
    "CapacityError",
    "EnvironmentDefinitionError",
    "EnvironmentFailure",
    "EpisodeOverError",
    "InvalidArgumentsError",
    "InvalidJSONError",
    "InvalidTypeError",
    "InvalidValueError",
    "MessageTooLargeError",
    "MessageValidationError",
    "NotResetError",
    "OmniEnvError",
    "ProtocolError",
    "SessionError",
    "SessionLostError",
    "SessionNotFoundError",
    "StepTimeoutError",
    "TaskError",
    "ToolError",
    "UnknownEnvironmentError",
    "UnknownMessageError",
    "UnknownToolError",
    "UsageError",
    "WorkerLostError",
]


class OmniEnvError(Exception):
    """Base of every omnienv error; ``code`` names it on the wire."""

    code: ClassVar[str] = "ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EnvironmentDefinitionError(OmniEnvError, TypeError):
    code = "DEFINITION_ERROR"


class UnknownEnvironmentError(OmniEnvError, LookupError):
    code = "UNKNOWN_ENVIRONMENT"


class TaskError(OmniEnvError, LookupError):
    code = "TASK_ERROR"


class UsageError(OmniEnvError):
    code = "USAGE_ERROR"


class NotResetError(UsageError):
    code = "NOT_RESET"


class EpisodeOverError(UsageError):
    code = "EPISODE_OVER"


class AgentOnlyError(UsageError):
    """The server is agent-only: agents get tools, and only its operator starts episodes."""

    code = "AGENT_ONLY"


class InvalidTypeError(UsageError, TypeError):
    """A caller passed an argument of the wrong type (an environment's name where its class
    belongs); the message names the fix. A TypeError too, for callers that catch those."""


class InvalidValueError(UsageError, ValueError):
    """A caller passed an argument or setting omnienv cannot use (a negative count, a policy no one
    made); the message names the fix. A ValueError too, for callers that catch those."""


class ActionError(OmniEnvError):
    code = "INVALID_ACTION"


class UnknownToolError(ActionError):
    code = "UNKNOWN_TOOL"


class InvalidArgumentsError(ActionError):
    code = "INVALID_ARGUMENTS"


class ToolError(ActionError):
    """Raise from a tool to answer the agent with an error message (the episode goes on)."""

    code = "TOOL_ERROR"


class AgentCausedEnd(OmniEnvError):
    """Raise from a tool when the agent's own actions ended the episode inside its limits.

    Not an infrastructure failure, so never masked: the episode ends (``done``), the rubric scores
    it, the agent reads ``message``, and ``info["ended_by_agent"]`` carries ``reason``.
    """

    code = "AGENT_CAUSED_END"

    def __init__(self, message: str, reason: str = "agent_caused_end") -> None:
        super().__init__(message)
        self.reason = reason


class EnvironmentFailure(OmniEnvError):
    """Infrastructure failed: the episode is flagged and must be masked, not scored."""

    code = "ENV_FAILURE"


class ProtocolError(OmniEnvError):
    """A frame broke the wire protocol. The server answers with an error frame and reads on."""

    code = "PROTOCOL_ERROR"


class InvalidJSONError(ProtocolError, ValueError):
    code = "INVALID_JSON"


class UnknownMessageError(ProtocolError):
    code = "UNKNOWN_TYPE"


class MessageValidationError(ProtocolError, ValueError):
    code = "VALIDATION_ERROR"


class MessageTooLargeError(ProtocolError):
    code = "MESSAGE_TOO_LARGE"


class SessionError(OmniEnvError):
    """The session cannot serve the request (busy, already attached, closing...)."""

    code = "SESSION_ERROR"


class CapacityError(SessionError):
    """Every session slot is taken; retry later or raise the server's ``max_sessions``."""

    code = "CAPACITY_REACHED"


class SessionNotFoundError(SessionError, LookupError):
    code = "SESSION_NOT_FOUND"


class SessionLostError(SessionError, ConnectionError):
    """The connection to the server died mid-session; the server has dropped the session."""

    code = "SESSION_LOST"


class StepTimeoutError(EnvironmentFailure):
    """A step overran the server's deadline; the episode is flagged as failed."""

    code = "STEP_TIMEOUT"


class WorkerLostError(EnvironmentFailure):
    """The process hosting the session's environment (a Ray actor) died: the episode is void and
    flagged as failed. The next ``reset()`` places the session on a live worker."""

    code = "WORKER_LOST"
