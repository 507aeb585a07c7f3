"""How answers are read and trimmed, on vLLM-shaped bodies; and the documentation's example runs."""

from __future__ import annotations

import re
from pathlib import Path

from omnienv.capture.wire import Asked, ask_chat, ask_responses, chat_tokens, response_tokens, strip_chat

DOC = Path(__file__).resolve().parents[2] / "docs" / "capture.md"


def test_the_fields_asked_for_and_what_the_harness_asked_itself() -> None:
    sent, asked = ask_chat({"messages": [], "stream": True, "logprobs": True})
    assert sent["return_token_ids"] and sent["logprobs"] and sent["stream_options"] == {"include_usage": True}
    assert asked == Asked(token_ids=False, logprobs=True, usage=False)
    sent, asked = ask_responses({"input": "hi", "include": ["reasoning.encrypted_content"]})
    assert sent["enable_response_messages"] and sent["include"][-1] == "message.output_text.logprobs"
    assert not asked.token_ids and not asked.logprobs
    assert ask_chat({"messages": []}, request_tokens=False)[0] == {"messages": []}


def test_logprobs_that_do_not_pair_with_the_ids_are_dropped_and_said() -> None:
    choice = {"token_ids": [5, 6, 7], "logprobs": {"content": [{"logprob": -0.5}]}, "finish_reason": "length"}
    tokens = chat_tokens({"prompt_token_ids": [1, 2], "choices": [choice, choice]})
    assert tokens.completion == [5, 6, 7] and tokens.logprobs is None and tokens.finish_reason == "length"
    assert "1 log-probabilities for 3 completion tokens" in (tokens.missing() or "")
    assert "2 choices: only the first is recorded" in (tokens.missing() or "")


def test_a_response_of_several_generations_keeps_no_ids() -> None:
    raw = {"type": "raw_message_tokens", "message": "", "tokens": [1]}
    tokens = response_tokens({"status": "completed", "input_messages": [raw], "output_messages": [raw, raw, raw]})
    assert tokens.prompt is None and "1 input and 3 output messages" in (tokens.missing() or "")
    incomplete = response_tokens({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}})
    assert incomplete.finish_reason == "max_output_tokens"


def test_logprobs_that_are_not_finite_numbers_are_dropped_and_said_on_every_path() -> None:
    """Written as is, NaN makes a record no JSON reader but Python's reads; a string would crash."""
    raw = {"type": "raw_message_tokens", "message": "", "tokens": [1, 2]}
    for bad in ("NaN", float("inf"), "abc", None, True, [1]):
        entries = [{"logprob": -0.1}, {"logprob": bad}]
        chat = chat_tokens(
            {"prompt_token_ids": [1], "choices": [{"token_ids": [3, 4], "logprobs": {"content": entries}}]}
        )
        part = {"type": "output_text", "text": "hi", "logprobs": entries}
        response = {"input_messages": [raw], "output_messages": [raw]}
        parts = response_tokens({**response, "output": [{"type": "message", "content": [part]}]})
        streamed = response_tokens(response, entries)
        for tokens in (chat, parts, streamed):
            assert tokens.logprobs is None, bad
            assert "not a finite number" in (tokens.missing() or ""), bad
    fine = response_tokens({"input_messages": [raw], "output_messages": [raw]}, [{"logprob": -0.5}, {"logprob": "-1"}])
    assert fine.logprobs == [-0.5, -1.0] and fine.missing() is None


def test_stripping_leaves_what_the_harness_asked_for() -> None:
    def answer() -> dict[str, object]:
        return {"prompt_token_ids": [1], "choices": [{"token_ids": [2], "logprobs": {"content": []}}]}

    assert strip_chat(answer(), Asked()) == {"choices": [{"logprobs": None}]}
    assert strip_chat(answer(), Asked(token_ids=True, logprobs=True)) == answer()


def test_the_documented_example_runs() -> None:
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    exec(compile(code, str(DOC), "exec"), {})


def test_ids_that_do_not_match_the_usage_counts_are_dropped_and_said() -> None:
    raw = {"type": "raw_message_tokens", "message": "", "tokens": [1, 2]}
    usage = {"input_tokens": 3, "output_tokens": 2}
    tokens = response_tokens({"status": "completed", "input_messages": [raw], "output_messages": [raw], "usage": usage})
    assert tokens.prompt is None and tokens.completion == [1, 2]
    assert "no prompt token ids: 2 came for the 3 the usage counts" in (tokens.missing() or "")
