"""A policy backed by any OpenAI-compatible model: vLLM, SGLang, Ollama, hosted APIs.

Three ways to talk to the model, one conversation per episode:

- ``chat`` (default): chat completions with ``tools=``; tool results go back as ``tool``
  messages, and images (screenshots) as a user message right after them.
- ``responses``: the Responses API with function tools and ``function_call_output`` items.
- ``text``: no native tool calling: the system prompt lists the tools and the model writes
  ``<tool_call>`` JSON (or the environment's tags), parsed by :mod:`omnienv.core.text_actions`.

Retries with backoff on rate limits, server errors and timeouts are the ``openai`` client's own
(``max_retries``, ``timeout``). What still fails reaches the episode loop as a :class:`ModelError`,
which flags the episode as failed rather than scoring it. A reply without a tool call ends the
episode (:class:`EndEpisode`): the model has stopped acting.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import openai

from omnienv.core import ActionError, Block, ImageBlock, OmniEnvError, TextBlock, ToolCall, ToolSpec
from omnienv.core.text_actions import TextActions, render_tools_prompt
from omnienv.rollout.policy import EndEpisode
from omnienv.rollout.trajectory import Episode

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

__all__ = ["ChatPolicy", "ModelError"]

Mode = Literal["chat", "responses", "text"]


class ModelError(OmniEnvError):
    """The model's API failed after the client's retries: the episode is flagged, not scored."""

    code = "MODEL_ERROR"
    failure_kind = "model"


@dataclass(slots=True)
class _Conversation:
    episode: Episode
    client: openai.AsyncOpenAI
    """The client this episode's calls go through (its own base URL when ``base_url_for`` is set)."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    pending: list[ToolCall] = field(default_factory=list)
    answered: int = 0
    model_calls: int = 0


class ChatPolicy:
    """Ask the model for the next tool call; one instance plays one episode at a time."""

    def __init__(
        self,
        model: str,
        tools: Mapping[str, ToolSpec],
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        mode: Mode = "chat",
        system_prompt: str | None = None,
        text_tags: Mapping[str, str | None] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        max_model_calls: int | None = None,
        max_retries: int = 3,
        timeout_s: float = 60.0,
        client: openai.AsyncOpenAI | None = None,
        base_url_for: Callable[[Episode], str] | None = None,
    ) -> None:
        """``base_url_for`` gives each episode its own base URL (sharing one connection pool): a
        caller that routes calls through a recorder keyed by URL, such as ``omnienv eval --capture``,
        can tell the episodes' calls apart without this class knowing of it."""
        self.name = f"{mode}:{model}"
        self.model = model
        self.mode = mode
        self.tools = tools
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_model_calls = max_model_calls
        self.base_url_for = base_url_for
        self.client = client or openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "none", max_retries=max_retries, timeout=timeout_s
        )
        tool_entries = [
            {"name": s.name, "description": s.description, "parameters": s.parameters} for s in tools.values()
        ]
        self._chat_tools = [{"type": "function", "function": entry} for entry in tool_entries]
        self._response_tools = [{"type": "function", **entry} for entry in tool_entries]
        if mode == "text":
            self._text = TextActions(tools, dict(text_tags or {}))
            system_prompt = render_tools_prompt(tools, text_tags, system_prompt)
        self.system_prompt = system_prompt
        self._conversation: _Conversation | None = None

    async def act(self, episode: Episode) -> ToolCall:
        conversation = self._conversation
        if conversation is None or conversation.episode is not episode:
            conversation = self._conversation = self._start(episode)
        self._add_results(conversation)
        if not conversation.pending:
            if self.max_model_calls is not None and conversation.model_calls >= self.max_model_calls:
                raise EndEpisode(f"the policy's limit of {self.max_model_calls} model calls was reached")
            conversation.pending = await self._ask(conversation)
        return conversation.pending.pop(0)

    # -- the conversation, in each mode's shape --------------------------------------------------

    def _start(self, episode: Episode) -> _Conversation:
        client = self.client
        if self.base_url_for is not None:
            client = client.with_options(base_url=self.base_url_for(episode))
        conversation = _Conversation(episode, client)
        episode.messages = conversation.messages
        if self.system_prompt:
            role = "developer" if self.mode == "responses" else "system"
            conversation.messages.append({"role": role, "content": self.system_prompt})
        blocks = episode.prompt.content if episode.prompt else ()
        conversation.messages.append({"role": "user", "content": self._user_content(blocks)})
        return conversation

    def _user_content(self, blocks: Iterable[Block]) -> list[dict[str, Any]]:
        text_type, image_type = ("input_text", "input_image") if self.mode == "responses" else ("text", "image_url")
        parts: list[dict[str, Any]] = []
        for block in blocks:
            if isinstance(block, TextBlock):
                parts.append({"type": text_type, "text": block.text})
            elif isinstance(block, ImageBlock):
                url = block.data_url
                parts.append({"type": image_type, "image_url": url if image_type == "input_image" else {"url": url}})
        return parts

    def _add_results(self, conversation: _Conversation) -> None:
        """Append the observations of the calls made since the model last spoke."""
        new_steps = conversation.episode.steps[conversation.answered :]
        conversation.answered = len(conversation.episode.steps)
        images: list[Block] = []
        for step in new_steps:
            text = step.result.observation.text
            images += [b for b in step.result.observation.content if isinstance(b, ImageBlock)]
            if self.mode == "chat":
                conversation.messages.append({"role": "tool", "tool_call_id": step.call.id, "content": text})
            elif self.mode == "responses":
                conversation.messages.append({"type": "function_call_output", "call_id": step.call.id, "output": text})
            else:
                conversation.messages.append({"role": "user", "content": f"<tool_response>\n{text}\n</tool_response>"})
        if images:
            conversation.messages.append({"role": "user", "content": self._user_content(images)})

    async def _ask(self, conversation: _Conversation) -> list[ToolCall]:
        conversation.model_calls += 1
        try:
            if self.mode == "responses":
                return await self._ask_responses(conversation)
            return await self._ask_chat(conversation)
        except openai.APIError as exc:
            raise ModelError(f"{type(exc).__name__}: {exc}") from exc

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.max_tokens is not None:
            options["max_output_tokens" if self.mode == "responses" else "max_tokens"] = self.max_tokens
        return options

    async def _ask_chat(self, conversation: _Conversation) -> list[ToolCall]:
        # The conversation holds plain dicts shared by both APIs, not the SDK's TypedDicts: the
        # request is passed as keywords and the (non-streaming) reply's type is stated.
        request: dict[str, Any] = {"model": self.model, "messages": conversation.messages, **self._options()}
        if self.mode == "chat":
            request["tools"] = self._chat_tools
        response: ChatCompletion = await conversation.client.chat.completions.create(**request)
        _count(conversation.episode, response.usage, "prompt_tokens", "completion_tokens")
        message = response.choices[0].message
        if self.mode == "text":
            conversation.messages.append({"role": "assistant", "content": message.content or ""})
            try:
                return self._text.parse(message.content or "")
            except ActionError as exc:
                raise EndEpisode(f"the model wrote no usable tool call: {exc.message}") from None
        calls = [
            ToolCall(call.function.name, _arguments(call.function.arguments), call.id)
            for call in message.tool_calls or ()
            if call.type == "function"
        ]
        entry: dict[str, Any] = {"role": "assistant", "content": message.content}
        if calls:
            entry["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in calls
            ]
        conversation.messages.append(entry)
        if not calls:
            raise EndEpisode("the model answered without calling a tool")
        return calls

    async def _ask_responses(self, conversation: _Conversation) -> list[ToolCall]:
        request: dict[str, Any] = {"model": self.model, "input": conversation.messages, **self._options()}
        request["tools"] = self._response_tools
        response: Response = await conversation.client.responses.create(**request)
        _count(conversation.episode, response.usage, "input_tokens", "output_tokens")
        calls = []
        for item in response.output:
            if item.type == "function_call":
                conversation.messages.append(
                    {"type": "function_call", "call_id": item.call_id, "name": item.name, "arguments": item.arguments}
                )
                calls.append(ToolCall(item.name, _arguments(item.arguments), item.call_id))
            elif item.type == "message":
                text = "".join(getattr(part, "text", "") for part in item.content)
                conversation.messages.append({"role": "assistant", "content": text})
        if not calls:
            raise EndEpisode("the model answered without calling a tool")
        return calls


def _arguments(raw: str | None) -> dict[str, Any]:
    """Parsed arguments; malformed JSON is passed on as is, so the environment explains the error."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return raw  # type: ignore[return-value]
    return value


def _count(episode: Episode, usage: Any, prompt_key: str, completion_key: str) -> None:
    if usage is None:
        return
    for ours, theirs in (("prompt_tokens", prompt_key), ("completion_tokens", completion_key)):
        episode.usage[ours] = episode.usage.get(ours, 0) + int(getattr(usage, theirs, 0) or 0)
