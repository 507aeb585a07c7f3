"""A policy backed by any OpenAI-compatible model: vLLM, SGLang, Ollama, hosted APIs.

Three ways to talk to the model, one conversation per episode:

- ``chat`` (default): chat completions with ``tools=``; tool results go back as ``tool``
  messages, and images (screenshots) as a user message right after them.
- ``responses``: the Responses API with function tools and ``function_call_output`` items.
- ``text``: no native tool calling: the system prompt lists the tools and the model writes
  ``<tool_call>`` JSON (or the environment's tags), parsed by :mod:`omnienv.core.text_actions`.

Retries with backoff on rate limits, server errors and timeouts are the ``openai`` client's own
(``max_retries``). Each try is bounded as a whole, not per read: its answer must arrive within
``timeout_s`` and within :data:`MAX_ANSWER_BYTES`, so a server that trickles bytes or sends a
body without end cannot hold an episode or fill memory. What still fails reaches the episode loop
as a :class:`ModelError`, which flags the episode as failed rather than scoring it; its message is
bounded and carries no API key. So does a reply the server did not finish (``finish_reason``
``abort`` or ``error``, a failed response): it is the server's doing, not a choice of the model's.
A finished reply without a tool call ends the episode (:class:`EndEpisode`): the model has stopped
acting. So does a request the server refuses for its length (past the model's context window): the
agent's turns filled it, and the loop scores the episode as it stands. What the model writes is
its own doing and is scored: malformed or absurd tool calls reach the environment, which answers
them as invalid actions.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import openai

from omnienv.core import ActionError, Block, ImageBlock, OmniEnvError, TextBlock, ToolCall, ToolSpec
from omnienv.core.text_actions import TextActions, render_tools_prompt
from omnienv.protocol.codec import MAX_ANSWER_BYTES
from omnienv.rollout.policy import EndEpisode
from omnienv.rollout.trajectory import Episode, valid_text

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

__all__ = ["MAX_ANSWER_BYTES", "ChatPolicy", "ModelError"]

Mode = Literal["chat", "responses", "text"]

ERROR_CHARS = 500
"""How much of a server's error text a failure message quotes: enough to see why, never a whole body."""
_FINISHED = frozenset({"stop", "tool_calls", "length", "function_call", None})
"""Chat finish reasons of a reply the model finished (None: servers that leave it out)."""
_UNFINISHED_STATUSES = frozenset({"failed", "cancelled", "queued", "in_progress"})
# The openai client's own HTTP library (httpx, or httpx2 in newer releases): the bounded transport
# below must be of the same library as the client it is given to.
_http: Any = sys.modules[openai.DefaultAsyncHttpxClient.__mro__[1].__module__.partition(".")[0]]


_CONTEXT_WINDOW = re.compile(r"context[ _](length|window)|maximum context|longer than the model|too many tokens", re.I)
"""How servers refuse a conversation past the model's context window (400): OpenAI's code
``context_length_exceeded``, vLLM's "maximum context length", SGLang's "longer than the model's
context length"."""


def _outgrew_context(exc: openai.APIError) -> bool:
    """Whether the server refused the conversation for its length. Past the first call, that is a
    turn limit the agent's own turns reached, so the episode ends there and is scored: as a failure,
    it would be the agent's way to void a losing episode (flood the conversation until the server
    refuses it). On the first call it is the operator's prompt or ``max_tokens``, and a failure."""
    if not isinstance(exc, openai.BadRequestError):
        return False
    body = exc.response.text[: ERROR_CHARS * 8] if exc.response is not None else str(exc)
    return exc.code == "context_length_exceeded" or bool(_CONTEXT_WINDOW.search(body))


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
        self._secrets = [api_key] if api_key else []
        self.client = client or openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "none",
            max_retries=max_retries,
            timeout=timeout_s,
            http_client=openai.DefaultAsyncHttpxClient(transport=_BoundedTransport(timeout_s, MAX_ANSWER_BYTES)),
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
            if conversation.episode.steps and _outgrew_context(exc):  # on the first call: the prompt or max_tokens
                raise EndEpisode(f"the conversation outgrew the model's context window: {self._explain(exc)}") from None
            raise ModelError(self._explain(exc)) from exc

    def _explain(self, exc: openai.APIError) -> str:
        """The failure as a message for the results file: the status and the start of the server's
        text (a whole error body can be megabytes), with the API key and bearer tokens taken out
        (a server may echo the request's headers in its error)."""
        if isinstance(exc, openai.APIStatusError):
            body = exc.response.text if exc.response is not None else str(exc)
            message = f"{type(exc).__name__}: status {exc.status_code}: {body[:ERROR_CHARS]}"
        else:
            cause = exc.__cause__
            message = f"{type(exc).__name__}: {exc}" + (f" ({type(cause).__name__}: {cause})" if cause else "")
        for secret in self._secrets:
            message = message.replace(secret, "[redacted]")
        message = _BEARER.sub(r"\1[redacted]", message)
        return message[: 2 * ERROR_CHARS]

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
        choice = response.choices[0] if response.choices else None
        if choice is None or choice.message is None:
            raise ModelError("the model server's reply holds no message (no choices, or a choice without one)")
        if choice.finish_reason not in _FINISHED:
            # vLLM's "abort", SGLang's "error": the server broke the generation off, the model did not stop
            raise ModelError(f"the model server did not finish the reply (finish_reason {choice.finish_reason!r})")
        message = choice.message
        content = valid_text(message.content) if isinstance(message.content, str) else None
        if self.mode == "text":
            conversation.messages.append({"role": "assistant", "content": content or ""})
            try:
                return self._text.parse(content or "")
            except ActionError as exc:
                raise EndEpisode(f"the model wrote no usable tool call: {exc.message}") from None
        calls = [
            ToolCall(_name(call.function.name), _arguments(call.function.arguments), _id(call.id))
            for call in message.tool_calls or ()
            if call.type == "function"
        ]
        entry: dict[str, Any] = {"role": "assistant", "content": content}
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
        if response.status in _UNFINISHED_STATUSES:
            raise ModelError(f"the model server did not finish the response (status {response.status!r})")
        calls = []
        for item in response.output or ():
            if item.type == "function_call":
                name, call_id = _name(item.name), _id(item.call_id)
                arguments = item.arguments if isinstance(item.arguments, str) else None
                conversation.messages.append(
                    {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments or "{}"}
                )
                calls.append(ToolCall(name, _arguments(item.arguments), call_id))
            elif item.type == "message":
                text = "".join(t for part in item.content if isinstance(t := getattr(part, "text", None), str))
                conversation.messages.append({"role": "assistant", "content": valid_text(text)})
        if not calls:
            raise EndEpisode("the model answered without calling a tool")
        return calls


_BEARER = re.compile(r"(Bearer\s+)[^\s\"',;]+", re.IGNORECASE)


def _arguments(raw: Any) -> dict[str, Any]:
    """Parsed arguments; what does not parse (malformed JSON, nesting too deep to parse, not a
    string) is passed on as is, so the environment answers it as an invalid action: it is the
    model's doing, and must be scored, never turned into a failure that trainers mask."""
    if raw is None:
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        return raw
    return value


def _name(name: Any) -> str:
    """A tool name the environment can look up: one that is not a string (a server that let the
    model write any JSON there) becomes one no tool has, so the environment answers "unknown tool"."""
    return valid_text(name) if isinstance(name, str) else f"<{type(name).__name__}>"


def _id(call_id: Any) -> str | None:
    return valid_text(call_id) if isinstance(call_id, str) else None


class _BoundedTransport(_http.AsyncBaseTransport):
    """The client's transport, with each try bounded as a whole: the HTTP clients' timeouts are per
    read, so a server sending a byte at a time would hold a call forever, and a body without end
    would be read into memory to its end. A try over ``total_s`` raises the library's ReadTimeout
    (the client retries it, as any timeout); an answer over ``max_bytes`` is a :class:`ModelError`,
    not retried."""

    def __init__(self, total_s: float, max_bytes: int) -> None:
        self.inner = _http.AsyncHTTPTransport(limits=_http.Limits(max_connections=1000, max_keepalive_connections=100))
        self.total_s = total_s
        self.max_bytes = max_bytes

    async def handle_async_request(self, request: Any) -> Any:
        try:
            async with asyncio.timeout(self.total_s):
                response = await self.inner.handle_async_request(request)
                try:
                    length = response.headers.get("content-length", "")
                    if length.isdigit() and int(length) > self.max_bytes:
                        raise ModelError(self._too_large(f"it announced {int(length):,} bytes"))
                    parts, size = [], 0
                    async for part in response.aiter_raw():
                        size += len(part)
                        if size > self.max_bytes:
                            raise ModelError(self._too_large("it sent more"))
                        parts.append(part)
                finally:
                    await response.aclose()
        except TimeoutError:
            raise _http.ReadTimeout(f"no whole answer within {self.total_s:g} s", request=request) from None
        return _http.Response(
            response.status_code, headers=response.headers, content=b"".join(parts), extensions=response.extensions
        )

    def _too_large(self, how: str) -> str:
        return f"the model server's answer is over the {self.max_bytes:,}-byte limit on answers ({how})"

    async def aclose(self) -> None:
        await self.inner.aclose()


def _count(episode: Episode, usage: Any, prompt_key: str, completion_key: str) -> None:
    if usage is None:
        return
    for ours, theirs in (("prompt_tokens", prompt_key), ("completion_tokens", completion_key)):
        episode.usage[ours] = episode.usage.get(ours, 0) + int(getattr(usage, theirs, 0) or 0)
