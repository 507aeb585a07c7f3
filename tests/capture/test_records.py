"""Training records from captured model calls: the token view, JSONL, and the exported shapes.

The calls are built by hand with known token ids, so every stitched sequence, mask and log-prob
can be checked exactly. The exported shapes are also read by the peers' own models, each in its
virtualenv: OpenEnv's ``TrainingTrace``, NeMo Gym's ATIF v1.7 model, and TRL's ``GRPOTrainer``
running one step on our rollout dict (``trl_rollout_check.py``).
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from omnienv.capture.calls import ModelCall
from omnienv.capture.exporters import ATIF_SCHEMA_VERSION, to_atif, to_openenv_trace, to_trl_rollout
from omnienv.capture.records import TokenSegment, TrainingRecord, iter_records, read_records, write_records
from omnienv.core import Failure, Observation, StepResult, ToolCall
from omnienv.rollout.trajectory import Episode, Step
from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind, run_json

SYSTEM = {"role": "system", "content": "You fix bugs."}
USER = {"role": "user", "content": "Fix sum() in stats.py"}
TOOL_CALL = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}


def chat(
    index: int,
    messages: list[dict[str, Any]],
    reply: dict[str, Any],
    prompt: list[int] | None,
    completion: list[int] | None,
    logprobs: list[float] | None,
    *,
    episode: str | None = "sess-1",
    missing: str | None = None,
) -> ModelCall:
    """One chat call as the proxy records it; ``reply`` is the assistant message."""
    return ModelCall(
        episode=episode,
        api="chat",
        request={"model": "tiny", "messages": messages},
        response={"model": "tiny", "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}]},
        prompt_token_ids=prompt,
        completion_token_ids=completion,
        logprobs=logprobs,
        finish_reason="stop",
        usage={"prompt_tokens": len(prompt or []), "completion_tokens": len(completion or [])},
        latency_s=0.25,
        missing=missing,
        index=index,
    )


def conversation() -> list[ModelCall]:
    """Two turns: a tool call, its result, then the answer; the second prompt extends the first
    prompt and completion with the tool turn's tokens (6, 7)."""
    first_reply: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]}
    second_messages: list[dict[str, Any]] = [
        SYSTEM,
        USER,
        first_reply,
        {"role": "tool", "tool_call_id": "c1", "content": "stats.py"},
    ]
    return [
        chat(0, [SYSTEM, USER], first_reply, [1, 2, 3], [4, 5], [-0.5, -0.25]),
        chat(
            1, second_messages, {"role": "assistant", "content": "Done."}, [1, 2, 3, 4, 5, 6, 7], [8, 9], [-1.0, -0.125]
        ),
    ]


def test_a_multi_turn_conversation_is_one_sequence_without_repeating_the_shared_prefix() -> None:
    record = TrainingRecord.from_calls(conversation(), reward=1.0)
    assert record.session_id == "sess-1"  # every call named it
    assert record.segments == [
        TokenSegment(
            token_ids=[1, 2, 3, 4, 5, 6, 7, 8, 9],
            loss_mask=[0, 0, 0, 1, 1, 0, 0, 1, 1],
            logprobs=[None, None, None, -0.5, -0.25, None, None, -1.0, -0.125],
            calls=[0, 1],
            prompt_length=3,
        )
    ]
    assert not record.rewritten and record.has_tokens and record.missing == [] and record.trainable


def test_calls_are_ordered_by_their_index() -> None:
    first, second = conversation()
    record = TrainingRecord.from_calls([second, first], reward=1.0)
    assert [call.index for call in record.calls] == [0, 1]
    assert record.segments is not None and record.segments[0].calls == [0, 1]


def test_a_rewritten_history_starts_a_new_segment() -> None:
    """The third call's prompt drops the earlier turns (a summarising harness): no stitching."""
    calls = [
        *conversation(),
        chat(2, [SYSTEM, USER], {"role": "assistant", "content": "Again."}, [1, 2, 10], [11], [-2.0]),
    ]
    record = TrainingRecord.from_calls(calls, reward=0.5)
    segments = record.segments
    assert segments is not None and len(segments) == 2 and record.rewritten
    assert segments[0].calls == [0, 1] and segments[0].token_ids == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert segments[1] == TokenSegment([1, 2, 10, 11], [0, 0, 0, 1], [None, None, None, -2.0], [2], 3)
    with pytest.raises(ValueError, match="history was rewritten"):
        to_trl_rollout([record])
    trace = to_openenv_trace(record)  # per call: nothing to stitch, so a rewrite is no obstacle
    assert [turn["loss_mask"] for turn in trace["turns"]][2] == [0, 0, 0, 1]


def test_a_retried_call_with_the_same_prompt_starts_a_new_segment() -> None:
    first, _ = conversation()
    retry = chat(1, [SYSTEM, USER], {"role": "assistant", "content": "x"}, [1, 2, 3], [12], [-0.75])
    segments = TrainingRecord.from_calls([first, retry], reward=0.0).segments
    assert segments is not None and [segment.calls for segment in segments] == [[0], [1]]


def test_calls_without_token_ids_say_so_and_give_no_token_view() -> None:
    first, _ = conversation()
    blind = chat(1, [SYSTEM, USER], {"role": "assistant", "content": "Done."}, None, None, None, missing="no ids")
    record = TrainingRecord.from_calls([first, blind], reward=1.0)
    assert record.segments is None and not record.has_tokens and not record.trainable
    assert record.missing == ["call 1: no token ids (no ids)"]
    with pytest.raises(ValueError, match="call 1: no token ids"):
        to_trl_rollout([record])
    with pytest.raises(ValueError, match="call 1: no token ids"):
        to_openenv_trace(record)
    atif = to_atif(record)  # a trajectory is still a faithful log without ids
    assert "completion_token_ids" not in atif["steps"][-1]["metrics"]
    assert atif["extra"]["missing"] == ["call 1: no token ids (no ids)"]


def test_a_call_of_several_choices_is_no_training_data() -> None:
    """Only its first choice is recorded, and the harness may have gone on with another: training
    the first on the episode's reward would credit tokens that played no part in it."""
    first, second = conversation()
    choices = second.response["choices"]
    second.response["choices"] = [*choices, {**choices[0], "index": 1}]
    record = TrainingRecord.from_calls([first, second], reward=1.0)
    assert record.has_tokens and not record.trainable
    assert record.missing == [
        "call 1: 2 choices, of which only the first is recorded (the harness may have used another)"
    ]
    assert record.void == record.missing
    with pytest.raises(ValueError, match="call 1: 2 choices"):
        to_openenv_trace(record)
    with pytest.raises(ValueError, match="call 1: 2 choices"):  # it gave TRL a row with the episode's reward
        to_trl_rollout([record])


def test_missing_or_misaligned_logprobs_are_reported_and_left_none() -> None:
    first, second = conversation()
    second.logprobs = [-1.0]  # one for two tokens: would shift credit, so it is dropped
    record = TrainingRecord.from_calls([first, second], reward=1.0)
    assert record.missing == ["call 1: 1 logprobs for 2 completion tokens"]
    assert record.segments is not None and record.segments[0].logprobs[-2:] == [None, None]
    assert record.segments[0].loss_mask[-2:] == [1, 1]  # still the model's tokens
    assert to_trl_rollout([record])["logprobs"][0][-2:] == [None, None]
    with pytest.raises(ValueError, match="1 logprobs for 2"):
        to_openenv_trace(record)


def test_a_failed_episode_has_no_reward_and_trains_nothing() -> None:
    failure = Failure("session_lost", "the sandbox died")
    with pytest.raises(ValueError, match="a failed episode has no reward"):
        TrainingRecord.from_calls(conversation(), reward=0.0, failure=failure)
    record = TrainingRecord.from_calls(conversation(), reward=None, failure=failure)
    assert record.reward is None and not record.trainable and record.segments is not None
    rows = to_trl_rollout([record])
    assert rows["reward"] == [None] and rows["failure"] == ["session_lost: the sandbox died"]
    trace = to_openenv_trace(record)
    assert all(not any(turn["loss_mask"]) for turn in trace["turns"])
    assert trace["turns"][0]["metadata"]["failure"] == failure.to_dict()
    assert to_atif(record)["extra"]["failure"] == failure.to_dict()


def _episode(failure: Failure | None = None) -> Episode:
    call = ToolCall("bash", {"cmd": "ls"})
    steps = [
        Step(call, StepResult(Observation.of("a.py"), reward=0.25), 0.1),
        Step(call, StepResult(Observation.of("ok"), reward=0.5, done=True), 0.1),
    ]
    return Episode(env="swe", index=3, task_id="t-7", seed=11, policy="agent", steps=steps, failure=failure)


def test_a_record_from_a_rollout_episode_takes_its_reward_and_failure() -> None:
    record = TrainingRecord.from_episode(_episode(), conversation())
    assert (record.reward, record.failure, record.task_id, record.env) == (0.75, None, "t-7", "swe")
    assert record.info == {"index": 3, "seed": 11, "policy": "agent"} and record.session_id == "sess-1"
    failure = Failure("env_error", "step raised")
    failed = TrainingRecord.from_episode(_episode(failure), conversation(), session_id="s-9")
    assert (failed.reward, failed.failure, failed.session_id) == (None, failure, "s-9")
    unfinished = _episode()
    unfinished.steps[-1].result.done = False
    assert TrainingRecord.from_episode(unfinished, conversation()).reward is None  # not over: nothing to score


def _records() -> list[TrainingRecord]:
    first, second = conversation()
    second.request["messages"][1] = {"role": "user", "content": "Réparer ✓"}
    return [
        TrainingRecord.from_calls([first, second], reward=0.1, task_id="t-1", env="swe", info={"seed": 3}),
        TrainingRecord.from_calls(conversation(), reward=None, failure=Failure("session_lost", "gone")),
        TrainingRecord.from_calls(
            [chat(0, [USER], {"role": "assistant", "content": "?"}, None, None, None, episode=None, missing="hosted")],
            reward=-1e-9,
        ),
    ]


def test_jsonl_round_trip_is_exact(tmp_path: Path) -> None:
    records = _records()
    path = tmp_path / "records.jsonl"
    assert write_records(path, records) == 3
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) == 3 and "Réparer ✓" in text
    back = read_records(path)
    assert back == records
    stream = io.StringIO()
    write_records(stream, back)
    assert stream.getvalue() == text  # byte for byte
    assert list(iter_records(io.StringIO(text + "\n\n"))) == records
    line = json.loads(text.splitlines()[0])
    assert line["segments"][0]["loss_mask"] == [0, 0, 0, 1, 1, 0, 0, 1, 1] and line["missing"] == []
    assert json.loads(text.splitlines()[2])["segments"] is None


def test_openenv_trace_shape() -> None:
    trace = to_openenv_trace(TrainingRecord.from_calls(conversation(), reward=1.0))
    assert set(trace) == {"schema_version", "turns"} and trace["schema_version"] == 1
    first, second = trace["turns"]
    assert set(first) == {
        "node_id",
        "prompt_token_ids",
        "completion_token_ids",
        "per_token_logps",
        "loss_mask",
        "request",
        "response",
        "metadata",
    }
    assert (first["node_id"], second["node_id"]) == ("sess-1/call-0", "sess-1/call-1")
    assert second["prompt_token_ids"] == [1, 2, 3, 4, 5, 6, 7] and second["completion_token_ids"] == [8, 9]
    assert second["per_token_logps"] == [-1.0, -0.125]
    assert second["loss_mask"] == [0] * 7 + [1, 1]  # over prompt plus completion, as OpenEnv requires


def test_atif_trajectory_shape() -> None:
    atif = to_atif(TrainingRecord.from_calls(conversation(), reward=1.0))
    assert atif["schema_version"] == ATIF_SCHEMA_VERSION == "ATIF-v1.7" and atif["session_id"] == "sess-1"
    assert atif["agent"]["name"] == "omnienv" and atif["agent"]["model_name"] == "tiny"
    steps = atif["steps"]
    assert [(s["step_id"], s["source"]) for s in steps] == [(1, "system"), (2, "user"), (3, "agent"), (4, "agent")]
    call_step, answer = steps[2], steps[3]
    assert call_step["tool_calls"] == [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "ls"}}]
    assert call_step["observation"] == {"results": [{"source_call_id": "c1", "content": "stats.py"}]}
    assert call_step["metrics"] == {
        "prompt_tokens": 3,
        "completion_tokens": 2,
        "prompt_token_ids": [1, 2, 3],
        "completion_token_ids": [4, 5],
        "logprobs": [-0.5, -0.25],
    }
    assert answer["message"] == "Done." and answer["llm_call_count"] == 1
    assert atif["final_metrics"] == {"total_steps": 4, "total_prompt_tokens": 10, "total_completion_tokens": 4}
    assert atif["extra"]["reward"] == 1.0


def responses_call() -> ModelCall:
    """One Responses API call: instructions, a string input, and an output with reasoning, text and a
    function call whose arguments are not JSON."""
    return ModelCall(
        episode="r-1",
        api="responses",
        request={"model": "tiny", "instructions": "Be brief.", "input": "Hi"},
        response={
            "model": "tiny",
            "output": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "greet"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]},
                {"type": "function_call", "call_id": "f1", "name": "look", "arguments": "not json"},
            ],
        },
        prompt_token_ids=[1, 2],
        completion_token_ids=[3],
        logprobs=[-0.5],
    )


def test_atif_reads_the_responses_api() -> None:
    steps = to_atif(TrainingRecord.from_calls([responses_call()], reward=None))["steps"]
    assert [(s["source"], s["message"]) for s in steps] == [("system", "Be brief."), ("user", "Hi"), ("agent", "Hello")]
    assert steps[2]["reasoning_content"] == "greet"
    assert steps[2]["tool_calls"] == [
        {"tool_call_id": "f1", "function_name": "look", "arguments": {}, "extra": {"raw_arguments": "not json"}}
    ]


def test_trl_rollout_shape() -> None:
    rows = to_trl_rollout([TrainingRecord.from_calls(conversation(), reward=1.0)])
    assert set(rows) == {"prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "failure", "session_id"} | {
        "cut"
    }
    assert rows["prompt_ids"] == [[1, 2, 3]] and rows["completion_ids"] == [[4, 5, 6, 7, 8, 9]]
    assert rows["env_mask"] == [[1, 1, 0, 0, 1, 1]]
    assert rows["logprobs"] == [[-0.5, -0.25, 0.0, 0.0, -1.0, -0.125]]  # 0.0 on the tool turn, as TRL's loop
    assert (rows["reward"], rows["failure"], rows["session_id"], rows["cut"]) == ([1.0], [None], ["sess-1"], [False])


def test_a_turn_the_token_limit_cut_is_said_in_the_record_and_every_export() -> None:
    """A cut turn is the model's tokens but not its whole answer: nothing past the call said so."""
    first, second = conversation()
    first.finish_reason = "length"
    record = TrainingRecord.from_calls([first, second], reward=1.0)
    assert record.cut == [0] and record.trainable and record.to_dict()["cut"] == [0]
    assert to_trl_rollout([record])["cut"] == [True] and to_atif(record)["extra"]["cut"] == [0]
    assert to_openenv_trace(record)["turns"][0]["metadata"]["finish_reason"] == "length"


# --- the peers' own code reads our shapes -----------------------------------------------------

OPENENV_READ = """
import json, sys
from openenv.core.harness.training import TrainingTrace
for line in sys.stdin:
    try:
        trace = TrainingTrace.model_validate_json(line)
        print(json.dumps({"ok": True, "masks": [turn.loss_mask for turn in trace.turns]}))
    except Exception as exc:
        print(json.dumps({"ok": False, "error": str(exc)[:2000]}))
"""

NEMO_GYM_READ = """
import json, sys
from nemo_gym.atif_v1_7 import AtifTrajectoryV1_7
for line in sys.stdin:
    try:
        trajectory = AtifTrajectoryV1_7.model_validate_json(line)
        print(json.dumps({"ok": True, "sources": [step.source for step in trajectory.steps]}))
    except Exception as exc:
        print(json.dumps({"ok": False, "error": str(exc)[:2000]}))
"""


def _read_by_peer(peer: str, code: str, payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    python = peer_python(peer)
    lines = "".join(json.dumps(payload) + "\n" for payload in payloads)
    result = subprocess.run(
        [str(python), "-c", code], input=lines, capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_openenv_reads_our_training_traces() -> None:
    ok = TrainingRecord.from_calls(conversation(), reward=1.0)
    failed = TrainingRecord.from_calls(conversation(), reward=None, failure=Failure("session_lost", "gone"))
    bad = to_openenv_trace(ok)
    bad["turns"][0]["loss_mask"] = [1, 1, 1, 1, 1]  # a trainable prompt: OpenEnv must refuse it
    read = _read_by_peer("openenv", OPENENV_READ, [to_openenv_trace(ok), to_openenv_trace(failed), bad])
    assert read[0] == {"ok": True, "masks": [[0, 0, 0, 1, 1], [0] * 7 + [1, 1]]}
    assert read[1] == {"ok": True, "masks": [[0] * 5, [0] * 9]}
    assert read[2]["ok"] is False and "trainable_prompt" in read[2]["error"]


def test_nemo_gym_reads_our_atif_trajectories() -> None:
    responses = TrainingRecord.from_calls([responses_call()], reward=None)
    records = [*_records(), responses, TrainingRecord.from_calls(conversation(), reward=1.0)]
    read = _read_by_peer("nemo_gym", NEMO_GYM_READ, [to_atif(record) for record in records])
    assert all(line["ok"] for line in read), read
    assert read[-1]["sources"] == ["system", "user", "agent", "agent"]


def test_trl_grpo_trains_one_step_on_our_rollout_dict() -> None:
    lines = run_json(peer_python("trl"), ROOT / "tests" / "capture" / "trl_rollout_check.py", timeout=300)
    rollout = by_kind(lines, "rollout")[0]
    assert rollout["keys"] == [
        "completion_ids",
        "cut",
        "env_mask",
        "failure",
        "logprobs",
        "prompt_ids",
        "reward",
        "session_id",
    ]
    exported = by_kind(lines, "exported")[0]["rows"]
    batch = by_kind(lines, "batch")[0]["rows"]
    assert len(batch) == 4
    for n, row in enumerate(batch):  # what TRL trains on is exactly what we exported
        assert row["prompt_ids"] == exported["prompt_ids"][n]
        assert row["completion_ids"] == exported["completion_ids"][n]
        assert row["tool_mask"] == exported["env_mask"][n]
    assert batch[0]["sampling_logps"] == exported["logprobs"][0]
    assert batch[2]["sampling_logps"][-3:] == [None, None, None]  # no logprobs from the server: NaN in TRL
    kwargs = by_kind(lines, "reward_kwargs")[0]
    assert kwargs["reward"] == [1.0, 0.0, 0.5, None]
    assert kwargs["failure"][3] == "session_lost: the sandbox died"
    assert kwargs["session_id"] == ["sess-0", "sess-1", "sess-2", "sess-3"]
    assert kwargs["completion_ids"] == exported["completion_ids"]
    assert batch[0]["advantage"] > 0 > batch[1]["advantage"]  # rewards 1.0 and 0.0 in one group
    assert batch[3]["advantage"] == 0.0  # the failed episode is masked, not scored 0
    trained = by_kind(lines, "trained")[0]
    assert trained["steps"] == 1 and trained["moved"]
    assert trained["logs"][0]["reward"] == pytest.approx(0.5)  # mean over the three scored rows
