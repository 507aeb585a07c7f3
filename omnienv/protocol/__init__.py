"""The session protocol without I/O: messages, the session state machine, codec, error codes.

Servers and clients are thin pumps around this package; every wire rule lives here once.
"""

from omnienv.protocol.codec import DEFAULT_MAX_MESSAGE_BYTES, decode, encode
from omnienv.protocol.codes import ERROR_TYPES, error_data, error_from_data, register_code
from omnienv.protocol.messages import (
    Close,
    GetState,
    ListTools,
    Mcp,
    RemoteTool,
    Request,
    Reset,
    Step,
    observation_from_reply,
    parse_action,
    parse_request,
    parse_reset,
    reset_reply,
    reset_request,
    state_from_reply,
    state_reply,
    step_reply,
    step_request,
    step_result_from_reply,
    tools_from_reply,
    tools_reply,
)
from omnienv.protocol.session import SessionMachine, SessionState

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ERROR_TYPES",
    "Close",
    "GetState",
    "ListTools",
    "Mcp",
    "RemoteTool",
    "Request",
    "Reset",
    "SessionMachine",
    "SessionState",
    "Step",
    "decode",
    "encode",
    "error_data",
    "error_from_data",
    "observation_from_reply",
    "parse_action",
    "parse_request",
    "parse_reset",
    "register_code",
    "reset_reply",
    "reset_request",
    "state_from_reply",
    "state_reply",
    "step_reply",
    "step_request",
    "step_result_from_reply",
    "tools_from_reply",
    "tools_reply",
]
