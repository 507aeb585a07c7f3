"""The sans-I/O protocol, driven with plain function calls: frames, codes, the state machine."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

import omnienv.core.errors as errors
from omnienv.core import Failure, ImageBlock, Observation, State, StepResult, TextBlock, ToolCall
from omnienv.core.errors import (
    CapacityError,
    EnvironmentFailure,
    EpisodeOverError,
    InvalidJSONError,
    MessageTooLargeError,
    MessageValidationError,
    OmniEnvError,
    SessionError,
    SessionNotFoundError,
    UnknownMessageError,
)
from omnienv.envs.wordle import Wordle
from omnienv.protocol import (
    ERROR_TYPES,
    Close,
    GetState,
    ListTools,
    Mcp,
    Reset,
    SessionMachine,
    SessionState,
    decode,
    encode,
    error_data,
    error_from_data,
    observation_from_reply,
    parse_request,
    reset_reply,
    state_from_reply,
    state_reply,
    step_reply,
    step_request,
    step_result_from_reply,
    tools_from_reply,
    tools_reply,
)

# -- requests ---------------------------------------------------------------------------------


def test_openenv_frames_parse_to_requests() -> None:
    call = {"type": "call_tool", "tool_name": "guess", "arguments": {"word": "crane"}}
    assert parse_request({"type": "step", "data": call}) == ToolCall("guess", {"word": "crane"})
    assert parse_request({"type": "step", "data": {"type": "list_tools"}}) == ListTools()
    assert parse_request({"type": "reset", "data": {"seed": 7}}) == Reset(seed=7)
    assert parse_request({"type": "reset"}) == Reset()
    assert parse_request({"type": "state"}) == GetState()
    assert parse_request({"type": "close"}) == Close()
    rpc = {"jsonrpc": "2.0", "method": "tools/list", "id": 1}
    assert parse_request({"type": "mcp", "data": rpc}) == Mcp(rpc)


def test_reset_maps_task_ids_and_ignores_dataset_columns() -> None:
    frame = {"type": "reset", "data": {"seed": 3, "task_id": "test/0003", "prompt": "row text", "answer": "x"}}
    assert parse_request(frame) == Reset(3, "test/0003", None)
    assert parse_request({"type": "reset", "data": {"task": "0001", "split": "test"}}) == Reset(None, "0001", "test")


def test_our_own_tool_call_shape_is_accepted() -> None:
    request = parse_request({"type": "step", "data": ToolCall("guess", {"word": "abc"}, "c1").to_dict()})
    assert request == ToolCall("guess", {"word": "abc"}, "c1")
    assert parse_request(step_request(ToolCall("guess", {"word": "abc"}))) == ToolCall("guess", {"word": "abc"})


@pytest.mark.parametrize(
    ("frame", "error", "mentions"),
    [
        ({"type": "bogus"}, UnknownMessageError, "Unknown message type: bogus"),
        ({}, UnknownMessageError, "expected reset, step"),
        ({"type": "step", "data": []}, MessageValidationError, "'data' must be a JSON object"),
        ({"type": "step", "data": {"type": "jump"}}, MessageValidationError, "call_tool"),
        ({"type": "step", "data": {"type": "call_tool"}}, MessageValidationError, "tool_name"),
        (
            {"type": "step", "data": {"type": "call_tool", "tool_name": "guess", "arguments": ["crane"]}},
            MessageValidationError,
            "'arguments' of tool 'guess' must be a JSON object, got list",
        ),
        ({"type": "reset", "data": {"seed": "7"}}, MessageValidationError, "'seed' must be a non-negative"),
        ({"type": "reset", "data": {"seed": True}}, MessageValidationError, "'seed'"),
        ({"type": "reset", "data": {"seed": -1}}, MessageValidationError, "'seed'"),
        ({"type": "reset", "data": {"task_id": 3}}, MessageValidationError, "'task_id' must be a string"),
    ],
)
def test_bad_frames_raise_typed_errors_that_name_the_fix(frame: dict, error: type, mentions: str) -> None:
    with pytest.raises(error, match=None) as caught:
        parse_request(frame)
    assert mentions in caught.value.message


def test_decode_names_what_is_wrong() -> None:
    assert decode(b'{"type": "state"}') == {"type": "state"}
    with pytest.raises(InvalidJSONError, match="Invalid JSON"):
        decode("not json")
    with pytest.raises(MessageValidationError, match="JSON object"):
        decode("[1, 2]")
    with pytest.raises(MessageTooLargeError, match="exceeds the 2,048-byte limit"):
        decode(b'{"x": "' + b"a" * 4096 + b'"}', 2048)


# -- the error table --------------------------------------------------------------------------


def _declared() -> list[type[OmniEnvError]]:
    return [cls for name in errors.__all__ if "code" in vars(cls := getattr(errors, name))]


@pytest.mark.parametrize("cls", _declared(), ids=lambda cls: cls.__name__)
def test_every_error_class_survives_the_wire(cls: type[OmniEnvError]) -> None:
    exc = cls("something went wrong")
    back = error_from_data(orjson.loads(encode(error_data(exc))))
    assert type(back) is cls
    assert back.message == "something went wrong"


def test_codes_are_unique_and_include_openenvs() -> None:
    codes = [cls.code for cls in _declared()]
    assert len(codes) == len(set(codes))
    for code in ("CAPACITY_REACHED", "VALIDATION_ERROR", "UNKNOWN_TYPE", "INVALID_JSON", "SESSION_ERROR"):
        assert code in ERROR_TYPES
    assert ERROR_TYPES["CAPACITY_REACHED"] is CapacityError
    assert issubclass(ERROR_TYPES["STEP_TIMEOUT"], EnvironmentFailure)


def test_foreign_and_unknown_codes_still_raise_something_typed() -> None:
    assert type(error_from_data({"code": "EXECUTION_ERROR", "message": "boom"})) is EnvironmentFailure
    unknown = error_from_data({"code": "MARTIAN", "message": "?"})
    assert type(unknown) is OmniEnvError and "MARTIAN" in unknown.message


def test_error_details_ride_along() -> None:
    exc = CapacityError("full")
    exc.details = {"active_sessions": 8, "max_sessions": 8}  # type: ignore[attr-defined]
    data = error_data(exc)
    assert data == {"message": "full", "code": "CAPACITY_REACHED", "active_sessions": 8, "max_sessions": 8}
    assert error_from_data(data).details == {"active_sessions": 8, "max_sessions": 8}  # type: ignore[attr-defined]


# -- replies ----------------------------------------------------------------------------------


def _roundtrip(data: dict) -> dict:
    return orjson.loads(encode(data))


def test_reset_reply_has_openenvs_shape_and_round_trips() -> None:
    observation = Observation((TextBlock("hello"), ImageBlock(b"\x89PNG", "image/png")))
    data = _roundtrip(reset_reply(observation))
    assert list(data) == ["observation", "reward", "done"]
    assert data["observation"]["metadata"] == {}
    assert observation_from_reply(data) == observation


@pytest.mark.parametrize(
    "result",
    [
        StepResult(Observation.of("CRANE"), 0.5, False, False, {"k": [1, 2]}),
        StepResult(Observation.of("won"), 1.5, True, False, {"rubric": {"solved": 1.0}}),
        StepResult(Observation.of("limit"), 0.0, False, True, {}),
        StepResult(
            Observation.of("nope", is_error=True),
            0.0,
            False,
            False,
            {"error": {"code": "UNKNOWN_TOOL", "message": "nope"}},
        ),
        StepResult(Observation.of("void"), 0.0, False, True, {}, Failure("env_error", "crashed")),
        StepResult(Observation((ImageBlock(b"png-bytes"),)), 0.0, False, False, {}),
    ],
)
def test_step_replies_round_trip_exactly(result: StepResult) -> None:
    data = _roundtrip(step_reply("guess", result))
    assert step_result_from_reply(data).to_dict() == result.to_dict()
    assert data["done"] == result.over  # OpenEnv clients read done as "the episode is over"


def test_step_reply_speaks_openenvs_mcp_observation() -> None:
    error = StepResult(
        Observation.of("unknown tool 'x'", is_error=True),
        0.0,
        False,
        False,
        {"error": {"code": "UNKNOWN_TOOL", "message": "unknown tool 'x'"}},
    )
    observation = step_reply("x", error)["observation"]
    assert set(observation) == {"metadata", "tool_name", "result", "error"}
    assert set(observation["result"]) == {"content", "structured_content", "meta", "data", "is_error"}
    assert observation["error"] == {"error_type": "tool_not_found", "message": "unknown tool 'x'"}
    assert observation["result"]["content"][0] == {
        "type": "text",
        "text": "unknown tool 'x'",
        "annotations": None,
        "meta": None,
    }


def test_tools_and_state_replies_round_trip() -> None:
    name, tools = tools_from_reply(_roundtrip(tools_reply("wordle", Wordle.tools.values())))
    assert name == "wordle"
    assert {t.name: t.parameters for t in tools.values()} == {t.name: t.parameters for t in Wordle.tools.values()}
    state = State("ep", 2, False, False, "test/0001", {"guesses": ["crane"]})
    assert state_from_reply(_roundtrip(state_reply(state))) == state
    failed = state_reply(state, Failure("step_timeout", "slow"))
    assert failed["truncated"] is True and failed["failure"] == {"kind": "step_timeout", "message": "slow"}


# -- the session state machine ----------------------------------------------------------------


def test_session_machine_transitions() -> None:
    machine = SessionMachine()
    step, reset = ToolCall("t"), Reset()
    assert machine.state is SessionState.NEW
    machine.begin(reset)
    with pytest.raises(SessionError, match="busy"):
        machine.begin(step)
    machine.end(reset)
    assert machine.state is SessionState.ACTIVE and not machine.busy
    machine.fail(Failure("step_timeout", "hung"))
    with pytest.raises(EpisodeOverError, match="hung"):
        machine.begin(step)
    machine.begin(GetState())
    machine.end(GetState())
    assert machine.needs_fresh_env
    machine.begin(reset)
    machine.end(reset)
    assert machine.state is SessionState.ACTIVE and machine.failure is None
    machine.begin(reset)
    machine.end(reset, ok=False)
    assert machine.state is SessionState.ACTIVE
    machine.close()
    with pytest.raises(SessionNotFoundError):
        machine.begin(reset)


def test_protocol_imports_no_network_stack() -> None:
    code = (
        "import sys, omnienv.protocol; "
        "print(','.join(m for m in ('starlette', 'uvicorn', 'httpx', 'websockets') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == ""


# -- JSON-RPC framing -------------------------------------------------------------------------


def test_json_rpc_framing_follows_openenv() -> None:
    from omnienv.protocol.jsonrpc import (
        INVALID_PARAMS,
        INVALID_REQUEST,
        PARSE_ERROR,
        SERVER_ERROR,
        RpcError,
        RpcRequest,
        error_response,
        parse_rpc,
        rpc_error_for,
        success,
    )

    assert parse_rpc(b'{"jsonrpc": "2.0", "method": "tools/list", "id": 3}') == RpcRequest("tools/list", {}, 3)
    for raw, code in (
        (b"xx", PARSE_ERROR),
        (b"{}", INVALID_REQUEST),
        (b"[]", INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "method": "m", "params": [1]}', INVALID_PARAMS),
    ):
        with pytest.raises(RpcError) as caught:
            parse_rpc(raw)
        assert caught.value.code == code
    assert success({"a": 1}, 7) == {"jsonrpc": "2.0", "id": 7, "result": {"a": 1}}
    assert error_response(RpcError(PARSE_ERROR, "Parse error")) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": PARSE_ERROR, "message": "Parse error", "data": None},
    }
    full = CapacityError("full")
    full.details = {"max_sessions": 1}  # type: ignore[attr-defined]
    assert (rpc_error_for(full).code, rpc_error_for(full).data) == (
        SERVER_ERROR,
        {"code": "CAPACITY_REACHED", "max_sessions": 1},
    )
    assert rpc_error_for(SessionNotFoundError("x")).code == INVALID_PARAMS


def test_public_surfaces_are_pinned() -> None:
    import omnienv.client
    import omnienv.protocol
    import omnienv.server

    assert set(omnienv.server.__all__) == {
        "OmniApp",
        "RoutesPlugin",
        "ServerConfig",
        "Session",
        "SessionManager",
        "assemble",
        "running",
        "serve",
        "uvicorn_config",
    }
    assert set(omnienv.client.__all__) == {
        "AsyncHTTPClient",
        "AsyncWebSocketClient",
        "Container",
        "ContainerError",
        "HTTPClient",
        "RemoteTool",
        "WebSocketClient",
        "acheck_url",
        "check_url",
        "connect",
        "start_container",
    }
    for module in (omnienv.protocol, omnienv.server, omnienv.client):
        assert all(hasattr(module, name) for name in module.__all__)


def test_an_openenv_servers_tool_errors_read_as_ours() -> None:
    foreign = {
        "observation": {
            "metadata": {},
            "tool_name": "x",
            "result": None,
            "error": {"error_type": "tool_not_found", "message": "Tool 'x' not found"},
        },
        "reward": None,
        "done": False,
    }
    result = step_result_from_reply(foreign)
    assert result.observation.is_error and result.observation.text == "Tool 'x' not found"
    assert result.info == {"error": {"code": "UNKNOWN_TOOL", "message": "Tool 'x' not found"}}


def test_null_arguments_on_the_wire_read_as_the_in_process_call() -> None:
    frame = {"type": "step", "data": {"type": "call_tool", "tool_name": "guess", "arguments": None}}
    assert parse_request(frame) == ToolCall("guess", None) == ToolCall("guess", {})
    assert step_request(ToolCall("guess", None))["data"]["arguments"] == {}
