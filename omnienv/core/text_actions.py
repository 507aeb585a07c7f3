"""Tool calls written as plain text, for models and frameworks without native function calling.

Text-only dialects (SkyRL Gym, GEM, Gymnasium, TRL's raw generations) hand the environment the
model's whole reply. Two grammars turn that reply into :class:`ToolCall` values:

- **Hermes/Qwen JSON**, always on: ``<tool_call>{"name": "guess", "arguments": {"word": "crane"}}
  </tool_call>``, as chat templates of Qwen, Hermes and most open models emit it. A reply may hold
  several; they run in order.
- **Tags**, declared by an environment class in one attribute, because a small model learns
  ``<guess>crane</guess>`` far faster than JSON::

      class Wordle(Environment):
          text_actions = {"guess": "word", "get_history": None}

  maps ``<guess>crane</guess>`` to ``guess(word="crane")`` and ``<get_history/>`` (or
  ``<get_history></get_history>``) to ``get_history()``. The value names the one argument that
  receives the tag's stripped text; ``None`` means the tool takes no arguments.

A reply that is nothing but one such JSON object, without the tags, also counts.

Reasoning inside ``<think>...</think>`` is ignored, so a model thinking aloud about a call does
not make it. A reply with no call, or a malformed one, raises :class:`ActionError` whose message
tells the model the expected format: dialects return that message as the observation and the
episode goes on, exactly like a wrong tool call.

:func:`render_tools_prompt` writes the matching system prompt (Hermes' ``<tools>`` listing plus
the tags), and :func:`merge_results` folds the results of one reply's calls into one turn.
Everything here is pure: no I/O, no environment calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from omnienv.core.content import Block
from omnienv.core.errors import ActionError, EnvironmentDefinitionError
from omnienv.core.tools import ToolSpec
from omnienv.core.types import Failure, StepResult, ToolCall, episode_over

__all__ = [
    "TagGrammar",
    "TextActions",
    "TextTurn",
    "grammar_of",
    "merge_results",
    "openai_tools",
    "parse_text_actions",
    "render_tools_prompt",
]

TagGrammar: TypeAlias = Mapping[str, "str | None"]
"""Tag name (a tool name) -> the argument that receives the tag's text, or None for no argument."""

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_TAG_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")


def grammar_of(env: Any) -> dict[str, str | None]:
    """The tag grammar an environment class (or instance) declares, checked against its tools."""
    grammar = dict(getattr(env, "text_actions", None) or {})
    tools: Mapping[str, ToolSpec] = getattr(env, "tools", {})
    for tag, argument in grammar.items():
        where = f"{getattr(env, 'name', env)!s}.text_actions"
        if tag not in tools:
            raise EnvironmentDefinitionError(f"{where}: '{tag}' is not a tool; tools: {', '.join(tools)}")
        if not _TAG_NAME.match(tag):
            raise EnvironmentDefinitionError(f"{where}: '{tag}' cannot be an XML tag name")
        properties = tools[tag].parameters.get("properties", {})
        if argument is not None and argument not in properties:
            raise EnvironmentDefinitionError(
                f"{where}: tool '{tag}' has no argument '{argument}'; its arguments: {', '.join(properties) or 'none'}"
            )
    return grammar


@dataclass(frozen=True, slots=True)
class TextActions:
    """The parser for one environment: its tools and its tag grammar, compiled once."""

    tools: Mapping[str, ToolSpec]
    tags: Mapping[str, str | None] = field(default_factory=dict)
    _tag_pattern: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.tags:
            names = "|".join(re.escape(tag) for tag in sorted(self.tags, key=len, reverse=True))
            pattern = re.compile(rf"<({names})\s*(?:/>|>(.*?)</\1\s*>)", re.DOTALL)
            object.__setattr__(self, "_tag_pattern", pattern)

    @classmethod
    def for_env(cls, env: Any, tags: TagGrammar | None = None) -> TextActions:
        """The parser for an environment; ``tags`` overrides the class's ``text_actions``."""
        grammar = grammar_of(env) if tags is None else grammar_of(_Declared(env, tags))
        return cls(env.tools, grammar)

    def parse(self, text: str) -> list[ToolCall]:
        """Every call in ``text``, in order of appearance; raises ActionError naming the format."""
        # Templates that open <think> in the prompt leave only its closing tag in the reply.
        visible = _THINK.sub("", text).rsplit("</think>", 1)[-1]
        found: list[tuple[int, ToolCall]] = []
        for match in _TOOL_CALL.finditer(visible):
            found.append((match.start(), self._json_call(match.group(1))))
        if self._tag_pattern is not None:
            for match in self._tag_pattern.finditer(visible):
                found.append((match.start(), self._tag_call(match.group(1), match.group(2))))
        if not found and visible.strip().startswith("{") and '"name"' in visible:
            found.append((0, self._json_call(visible)))  # a bare call, as some templates emit it
        if not found:
            raise ActionError(f"No tool call found in your reply. {self.format_hint()}")
        return [call for _, call in sorted(found, key=lambda pair: pair[0])]

    def _json_call(self, body: str) -> ToolCall:
        try:
            data = json.loads(body.strip())
        except json.JSONDecodeError as exc:
            raise ActionError(
                f"The text inside <tool_call></tool_call> is not valid JSON ({exc.msg} at position "
                f"{exc.pos}). {self.format_hint()}"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise ActionError(f'A <tool_call> must hold a JSON object with a string "name". {self.format_hint()}')
        arguments = data.get("arguments", data.get("parameters", {}))
        if isinstance(arguments, str):  # some templates emit the arguments as a JSON string
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError:
                raise ActionError(
                    f"The \"arguments\" of tool '{data['name']}' is a string that is not JSON; "
                    f"give a JSON object. {self.format_hint()}"
                ) from None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ActionError(
                f"The \"arguments\" of tool '{data['name']}' must be a JSON object, got "
                f"{type(arguments).__name__}. {self.format_hint()}"
            )
        return ToolCall(data["name"], arguments)

    def _tag_call(self, tag: str, body: str | None) -> ToolCall:
        argument = self.tags[tag]
        if argument is None:
            return ToolCall(tag, {})
        return ToolCall(tag, {argument: (body or "").strip()})

    def format_hint(self) -> str:
        """One paragraph telling the model how to write a call; ends every parse error."""
        example = next(iter(self.tools.values()), None)
        name = example.name if example else "tool_name"
        hint = 'Call a tool by writing <tool_call>{"name": "' + name + '", "arguments": {...}}</tool_call>'
        if self.tags:
            hint += " or with a tag: " + ", ".join(_tag_example(tag, arg) for tag, arg in self.tags.items())
        return hint + f". Available tools: {', '.join(self.tools) or 'none'}."


@dataclass(frozen=True, slots=True)
class _Declared:
    """An environment seen with another tag grammar, for :func:`grammar_of`'s checks."""

    env: Any
    text_actions: TagGrammar

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        return self.env.tools  # type: ignore[no-any-return]

    @property
    def name(self) -> str:
        return str(getattr(self.env, "name", self.env))


def _tag_example(tag: str, argument: str | None) -> str:
    return f"<{tag}/>" if argument is None else f"<{tag}>{argument}</{tag}>"


def parse_text_actions(text: str, tools: Mapping[str, ToolSpec], tags: TagGrammar | None = None) -> list[ToolCall]:
    """One-off parse; build a :class:`TextActions` once when parsing many replies."""
    return TextActions(tools, dict(tags or {})).parse(text)


def openai_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs in the OpenAI chat-completions ``tools=`` shape."""
    return [{"type": "function", "function": spec.to_dict()} for spec in tools]


def render_tools_prompt(
    tools: Mapping[str, ToolSpec], tags: TagGrammar | None = None, preamble: str | None = None
) -> str:
    """A system prompt listing the tools Hermes-style, for models without native tool calling."""
    listing = "\n".join(json.dumps(entry, ensure_ascii=False) for entry in openai_tools(tools.values()))
    parts = [preamble.rstrip()] if preamble else []
    parts += [
        "# Tools",
        "You may call one or more functions. Their signatures are listed within <tools></tools> tags:",
        f"<tools>\n{listing}\n</tools>",
        "For each function call, write a JSON object with the function name and its arguments within "
        "<tool_call></tool_call> tags:",
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>',
    ]
    if tags:
        lines = [
            f"  {_tag_example(tag, arg)}  calls {tag}" + (f"({arg}=...)" if arg else "()") for tag, arg in tags.items()
        ]
        parts.append("You may also write these calls as tags:\n" + "\n".join(lines))
    return "\n\n".join(parts)


@dataclass(frozen=True, slots=True)
class TextTurn:
    """One model reply's outcome: the results of its calls folded into a single turn."""

    text: str
    reward: float = 0.0
    done: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    failure: Failure | None = None
    images: tuple[Block, ...] = ()

    @property
    def over(self) -> bool:
        """The episode takes no further turn: it ended, was cut short, or failed."""
        return episode_over(self)


def merge_results(results: Sequence[StepResult]) -> TextTurn:
    """Fold the results of one reply's calls: texts joined, rewards summed, flags from the last.

    ``info`` is the last result's, plus ``calls`` (how many ran) when more than one did.
    """
    if not results:
        raise ValueError("merge_results needs at least one StepResult")
    last = results[-1]
    info = dict(last.info)
    if len(results) > 1:
        info["calls"] = len(results)
    return TextTurn(
        text="\n".join(result.observation.text for result in results),
        reward=sum(result.reward for result in results),
        done=last.done,
        truncated=last.truncated,
        info=info,
        failure=last.failure,
        images=tuple(block for r in results for block in r.observation.content if block.type == "image"),
    )
