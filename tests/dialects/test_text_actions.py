"""Parsing tool calls from a model's text, and the prompt that teaches the format."""

from __future__ import annotations

import json

import pytest

from omnienv.core import ActionError, EnvironmentDefinitionError, Failure, Observation, StepResult, ToolCall
from omnienv.core.text_actions import (
    TextActions,
    grammar_of,
    merge_results,
    openai_tools,
    parse_text_actions,
    render_tools_prompt,
)
from omnienv.envs.wordle import Wordle
from tests.dialects.envs import Counter

WORDLE = TextActions.for_env(Wordle)


def test_hermes_json_call() -> None:
    text = 'Let me try.\n<tool_call>\n{"name": "guess", "arguments": {"word": "crane"}}\n</tool_call>'
    assert WORDLE.parse(text) == [ToolCall("guess", {"word": "crane"})]


def test_several_calls_keep_their_order_across_grammars() -> None:
    text = (
        '<guess>slate</guess> then <tool_call>{"name": "get_history", "arguments": {}}</tool_call>'
        " and <guess> crane </guess>"
    )
    assert WORDLE.parse(text) == [
        ToolCall("guess", {"word": "slate"}),
        ToolCall("get_history", {}),
        ToolCall("guess", {"word": "crane"}),
    ]


def test_self_closing_tag_for_a_tool_without_arguments() -> None:
    assert WORDLE.parse("<get_history/>") == [ToolCall("get_history", {})]
    assert WORDLE.parse("<get_history></get_history>") == [ToolCall("get_history", {})]


def test_arguments_given_as_a_json_string_or_parameters_key() -> None:
    as_string = '<tool_call>{"name": "guess", "arguments": "{\\"word\\": \\"crane\\"}"}</tool_call>'
    as_parameters = '<tool_call>{"name": "guess", "parameters": {"word": "crane"}}</tool_call>'
    assert WORDLE.parse(as_string) == WORDLE.parse(as_parameters) == [ToolCall("guess", {"word": "crane"})]


def test_an_unclosed_final_tool_call_still_counts() -> None:
    # Generation often stops at the stop token, before the closing tag.
    assert WORDLE.parse('<tool_call>{"name": "guess", "arguments": {"word": "crane"}}') == [
        ToolCall("guess", {"word": "crane"})
    ]


def test_a_bare_json_call_counts_only_when_it_is_the_whole_reply() -> None:
    assert WORDLE.parse(' {"name": "guess", "arguments": {"word": "crane"}} ') == [ToolCall("guess", {"word": "crane"})]
    with pytest.raises(ActionError, match="No tool call found"):
        WORDLE.parse('I would call {"name": "guess"} here')


def test_calls_inside_reasoning_are_ignored() -> None:
    text = "<think>maybe <guess>wrong</guess>?</think><guess>right</guess>"
    assert WORDLE.parse(text) == [ToolCall("guess", {"word": "right"})]
    opened_by_the_template = "maybe <guess>wrong</guess>?\n</think>\n<guess>right</guess>"
    assert WORDLE.parse(opened_by_the_template) == [ToolCall("guess", {"word": "right"})]


def test_no_call_explains_the_format() -> None:
    with pytest.raises(ActionError) as caught:
        WORDLE.parse("I think the word is crane.")
    message = caught.value.message
    assert message.startswith("No tool call found")
    assert "<tool_call>" in message and "<guess>word</guess>" in message and "guess, get_history" in message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<tool_call>{name: guess}</tool_call>", "not valid JSON"),
        ('<tool_call>["guess"]</tool_call>', 'string "name"'),
        ('<tool_call>{"name": "guess", "arguments": [1]}</tool_call>', "must be a JSON object"),
        ('<tool_call>{"name": "guess", "arguments": "word=crane"}</tool_call>', "string that is not JSON"),
    ],
)
def test_malformed_calls_name_the_problem_and_the_format(text: str, problem: str) -> None:
    with pytest.raises(ActionError) as caught:
        WORDLE.parse(text)
    assert problem in caught.value.message
    assert "Call a tool by writing <tool_call>" in caught.value.message


def test_without_a_grammar_tags_are_plain_text() -> None:
    with pytest.raises(ActionError):
        parse_text_actions("<guess>crane</guess>", Wordle.tools)
    assert parse_text_actions("<guess>crane</guess>", Wordle.tools, {"guess": "word"}) == [
        ToolCall("guess", {"word": "crane"})
    ]


def test_grammar_is_checked_against_the_tools() -> None:
    assert grammar_of(Wordle) == {"guess": "word", "get_history": None}
    assert grammar_of(Counter) == {"add": "n", "peek": None}
    with pytest.raises(EnvironmentDefinitionError, match="'shout' is not a tool"):
        TextActions.for_env(Wordle, {"shout": "word"})
    with pytest.raises(EnvironmentDefinitionError, match="has no argument 'letters'"):
        TextActions.for_env(Wordle, {"guess": "letters"})


def test_tag_text_is_passed_as_given_and_validated_by_the_tool() -> None:
    # The parser does not coerce: "<add>2</add>" gives "2", which the tool's schema turns into 2.
    calls = TextActions.for_env(Counter).parse("<add>2</add>")
    assert calls == [ToolCall("add", {"n": "2"})]
    assert Counter.tools["add"].validate(calls[0].arguments) == {"n": 2}


def test_tools_prompt_lists_every_tool_as_json_and_the_formats() -> None:
    prompt = render_tools_prompt(Wordle.tools, grammar_of(Wordle), preamble="You play Wordle.")
    assert prompt.startswith("You play Wordle.")
    listing = prompt.split("<tools>\n")[1].split("\n</tools>")[0]
    entries = [json.loads(line) for line in listing.splitlines()]
    assert entries == openai_tools(Wordle.tools.values())
    assert entries[0]["function"]["parameters"]["properties"]["word"]["description"] == "A five-letter English word."
    assert '"arguments": <args-json-object>' in prompt
    assert "<guess>word</guess>  calls guess(word=...)" in prompt and "<get_history/>  calls get_history()" in prompt


def test_merge_results_joins_texts_sums_rewards_and_keeps_the_last_flags() -> None:
    first = StepResult(Observation.of("a"), 0.5, info={"x": 1})
    last = StepResult(Observation.of("b"), 1.0, True, False, {"rubric": {"r": 1.0}})
    turn = merge_results([first, last])
    assert (turn.text, turn.reward, turn.done, turn.truncated) == ("a\nb", 1.5, True, False)
    assert turn.info == {"rubric": {"r": 1.0}, "calls": 2}
    failed = merge_results([StepResult(Observation.of("x"), 0.0, False, True, {}, Failure("env_error", "boom"))])
    assert failed.over and failed.failure == Failure("env_error", "boom")
    with pytest.raises(ValueError):
        merge_results([])
