"""What a provider call yields: text as it streams, and at the end one complete response.

Also the assembly of streamed chunks (text deltas, tool-call deltas by index, the usage chunk) into
that response. Works on the openai SDK's chunk objects by attribute, so this module imports nothing
heavy.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from catbuddy.llm.faults import MalformedChunk, UnsupportedChunk
from catbuddy.llm.reasoning import (
    REASONING,
    REASONING_CONTENT,
    REASONING_DETAILS,
    DetailsMerger,
    ThinkSplitter,
    content_parts,
    delta_reasoning_items,
    delta_reasoning_text,
    reasoning_text,
)
from catbuddy.text import valid_text


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None = None  # prompt tokens served from the provider's prompt cache
    cache_write_tokens: int | None = None  # prompt tokens written to the cache (Anthropic bills 1.25×)
    reasoning_tokens: int | None = None  # of the completion tokens, those spent reasoning

    @classmethod
    def from_sdk(cls, usage: Any) -> Usage | None:
        if usage is None:
            return None
        details = _get(usage, "prompt_tokens_details")
        cached = _count(_get(details, "cached_tokens")) if details is not None else None
        if cached is None:  # DeepSeek reports its disk cache at the top level
            cached = _count(_get(usage, "prompt_cache_hit_tokens"))
        if cached is None:  # Anthropic's names, passed through by some gateways
            cached = _count(_get(usage, "cache_read_input_tokens"))
        written = _count(_get(details, "cache_write_tokens")) if details is not None else None
        if written is None:
            written = _count(_get(usage, "cache_creation_input_tokens"))
        completion_details = _get(usage, "completion_tokens_details")
        reasoning = _count(_get(completion_details, "reasoning_tokens")) if completion_details else None
        return cls(
            prompt_tokens=_count(_get(usage, "prompt_tokens")),
            completion_tokens=_count(_get(usage, "completion_tokens")),
            cached_tokens=cached,
            cache_write_tokens=written,
            reasoning_tokens=reasoning,
        )


@dataclass
class LLMResponse:
    """One assistant reply. ``message`` is in OpenAI chat format, ready to append to the history."""

    message: dict[str, Any]
    finish_reason: str | None
    usage: Usage | None
    model: str | None = None

    @property
    def text(self) -> str:
        return self.message.get("content") or ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])

    @property
    def reasoning(self) -> str:
        return reasoning_text(self.message)

    @property
    def is_empty(self) -> bool:
        """No text and no tool calls: nothing an assistant message may hold."""
        return not self.text and not self.tool_calls


@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class ReasoningChunk:
    """Reasoning ("thinking") as it streams: shown apart, never part of the answer."""

    text: str


@dataclass(frozen=True)
class ToolCallProgress:
    """A tool call is being streamed: its name is known, ``chars`` of its arguments have arrived."""

    index: int
    call_id: str
    name: str
    chars: int


@dataclass(frozen=True)
class Completed:
    response: LLMResponse


ProviderEvent = TextChunk | ReasoningChunk | ToolCallProgress | Completed
StreamEvent = TextChunk | ReasoningChunk | ToolCallProgress


def _get(obj: Any, name: str) -> Any:
    """A field of an SDK object or of a plain dict (the SDK keeps shapes it does not know as dicts)."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _optional(obj: Any, name: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj.name`` if it is None or of ``kind``; otherwise the chunk is malformed."""
    value = _get(obj, name)
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    raise MalformedChunk(f"{where}.{name} is {type(value).__name__}, not {getattr(kind, '__name__', kind)}")


def _is_object(value: Any) -> bool:
    return value is not None and not isinstance(value, str | int | float | bool | list | tuple)


def _items(obj: Any, name: str, where: str) -> Iterable[Any]:
    value = _get(obj, name)
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise MalformedChunk(f"{where}.{name} is {type(value).__name__}, not a list")
    for i, item in enumerate(value):
        if not _is_object(item):
            raise MalformedChunk(f"{where}.{name}[{i}] is {type(item).__name__}, not an object")
    return value


@dataclass
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    chars: int = 0
    extra_content: dict[str, Any] | None = None  # Gemini's thought signature rides here


def assistant_message(
    content: str | None,
    calls: list[dict[str, Any]],
    reasoning: str = "",
    details: list[dict[str, Any]] | None = None,
    reasoning_field: str = REASONING,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message[REASONING_CONTENT if reasoning_field == REASONING_CONTENT else REASONING] = reasoning
    if details:
        message[REASONING_DETAILS] = details
    return message


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def tool_call_dict(
    call_id: str, name: str, arguments: str, extra_content: dict[str, Any] | None = None
) -> dict[str, Any]:
    # Some local servers omit ids or send "" for a call without arguments; the API wants both.
    call: dict[str, Any] = {
        "id": call_id or new_call_id(),
        "type": "function",
        "function": {"name": valid_text(name), "arguments": valid_text(arguments) or "{}"},
    }
    if extra_content:
        call["extra_content"] = extra_content
    return call


def unique_call_ids(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every call gets an id of its own: a missing or repeated one is replaced by a fresh one, so each
    result can be matched to its call (two calls sharing an id would leave one of them unanswered)."""
    seen: set[str] = set()
    for call in calls:
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            call["id"] = call_id = new_call_id()
        seen.add(call_id)
    return calls


class StreamAssembler:
    """Feeds on ``chat.completion.chunk`` objects; ``response()`` gives the assembled reply.

    A chunk that is not shaped like one raises ``MalformedChunk``: the provider decides whether that
    is retried (nothing shown yet) or ends the call keeping ``text``."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self.reasoning_field = REASONING  # reasoning_content once a delta used that field
        self._details = DetailsMerger()
        self._think = ThinkSplitter()
        self._calls: dict[int, _CallParts] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.chunks = 0  # chunks fed, valid or not
        self.choices = 0  # choice deltas seen (a stream of usage-only chunks has none)

    @property
    def text(self) -> str:
        """The reply text assembled so far."""
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        """The reasoning assembled so far (plain text, or the readable part of the details)."""
        return "".join(self._reasoning)

    def feed(self, chunk: Any) -> list[StreamEvent]:
        self.chunks += 1
        if not _is_object(chunk):
            raise MalformedChunk(f"a chunk is {type(chunk).__name__}, not an object")
        events: list[StreamEvent] = []
        self.model = _optional(chunk, "model", str, "chunk") or self.model
        usage = _get(chunk, "usage")
        if usage is not None:  # the include_usage chunk (some servers put it on the last choice chunk)
            if not _is_object(usage):
                raise MalformedChunk(f"chunk.usage is {type(usage).__name__}, not an object")
            self.usage = Usage.from_sdk(usage)
        for choice in _items(chunk, "choices", "chunk"):
            if _optional(choice, "index", int, "choice") not in (0, None):
                continue  # we ask for one choice; ignore any other
            self.choices += 1
            delta = _get(choice, "delta")
            if delta is not None:
                if not _is_object(delta):
                    raise MalformedChunk(f"choice.delta is {type(delta).__name__}, not an object")
                self._feed_reasoning(delta, events)
                self._feed_content(delta, events)
                for call_delta in _items(delta, "tool_calls", "delta"):
                    events.append(self._feed_call(call_delta))
            finish = _optional(choice, "finish_reason", str, "choice")
            if finish:
                self.finish_reason = finish
        return events

    def _feed_reasoning(self, delta: Any, events: list[StreamEvent]) -> None:
        name, text = delta_reasoning_text(delta)
        if name == REASONING_CONTENT:
            self.reasoning_field = REASONING_CONTENT
        items = delta_reasoning_items(delta)
        if not text:  # only items (Snowflake's Claude): their readable text is what streams
            text = "".join(
                str(item.get(k))
                for item in items
                for k in ("text", "summary")
                if isinstance(item.get(k), str)
            )
        self._add_reasoning(text, events)
        self._details.feed(items)

    def _add_reasoning(self, text: str, events: list[StreamEvent]) -> None:
        if text:
            text = valid_text(text)
            self._reasoning.append(text)
            events.append(ReasoningChunk(text))

    def _add_text(self, text: str, events: list[StreamEvent]) -> None:
        if text:
            text = valid_text(text)
            self._text.append(text)
            events.append(TextChunk(text))

    def _feed_content(self, delta: Any, events: list[StreamEvent]) -> None:
        content = _get(delta, "content")
        if isinstance(content, list | tuple):  # Magistral: thinking and text parts
            text, reasoning = content_parts(list(content))
            self._add_reasoning(reasoning, events)
            self._add_text(text, events)
            return
        if content is not None and not isinstance(content, str):
            raise UnsupportedChunk(f"delta.content is {type(content).__name__}, not text or a list of parts")
        if content:
            text, reasoning = self._think.feed(content)
            self._add_reasoning(reasoning, events)
            self._add_text(text, events)
        refusal = _optional(delta, "refusal", str, "delta")
        if refusal and not content:
            self._add_text(refusal, events)

    @property
    def details(self) -> list[dict[str, Any]]:
        """The ``reasoning_details`` items so far, merged."""
        return self._details.items

    def feed_whole(self, message: Any) -> None:
        """An unstreamed message read as one delta: the same shapes, the same split of reasoning from text."""
        self._feed_reasoning(message, [])
        self._feed_content(message, [])
        self.finish()

    def finish(self) -> list[StreamEvent]:
        """The stream ended: what the ``<think>`` splitter still held back."""
        events: list[StreamEvent] = []
        text, reasoning = self._think.flush()
        self._add_reasoning(reasoning, events)
        self._add_text(text, events)
        return events

    def _feed_call(self, delta: Any) -> ToolCallProgress:
        index = _optional(delta, "index", int, "tool_call")
        call_id = _optional(delta, "id", str, "tool_call")
        if index is None:  # servers that omit the index: a new id starts a new call
            known = next((i for i, p in self._calls.items() if call_id and p.id == call_id), None)
            if known is not None:
                index = known
            elif call_id or not self._calls:
                index = len(self._calls)
            else:
                index = max(self._calls)
        parts = self._calls.setdefault(index, _CallParts())
        if call_id:
            parts.id = call_id
        function = _get(delta, "function")
        if function is not None:
            if not _is_object(function):
                raise MalformedChunk(f"tool_call.function is {type(function).__name__}, not an object")
            name = _optional(function, "name", str, "function")
            if name:
                parts.name = name
            fragment = _optional(function, "arguments", str, "function")
            if fragment:
                parts.arguments.append(fragment)
                parts.chars += len(fragment)
        extra = _get(delta, "extra_content")
        if extra is None:
            model_extra = getattr(delta, "model_extra", None)
            extra = model_extra.get("extra_content") if isinstance(model_extra, dict) else None
        if isinstance(extra, dict) and extra:
            parts.extra_content = {**(parts.extra_content or {}), **extra}
        return ToolCallProgress(index, parts.id, parts.name, parts.chars)

    def response(self) -> LLMResponse:
        calls = unique_call_ids(
            [
                tool_call_dict(parts.id, parts.name, "".join(parts.arguments), parts.extra_content)
                for _, parts in sorted(self._calls.items())
            ]
        )
        message = assistant_message(
            self.text, calls, self.reasoning, self._details.items, self.reasoning_field
        )
        return LLMResponse(message, self.finish_reason, self.usage, self.model)


def choice_count(completion: Any) -> int:
    choices = _get(completion, "choices")
    return len(choices) if isinstance(choices, list | tuple) else 0


def response_from_completion(completion: Any) -> LLMResponse:
    """An ``LLMResponse`` from a non-streamed ``chat.completion`` (no choices: an empty response)."""
    if not _is_object(completion):
        raise MalformedChunk(f"the completion is {type(completion).__name__}, not an object")
    choices = list(_items(completion, "choices", "completion"))
    usage_obj = _get(completion, "usage")
    usage = Usage.from_sdk(usage_obj) if _is_object(usage_obj) else None
    model = _optional(completion, "model", str, "completion")
    if not choices:
        return LLMResponse(assistant_message(None, []), None, usage, model)
    choice = choices[0]
    message = _get(choice, "message")
    if not _is_object(message):
        raise MalformedChunk("choices[0].message is missing or not an object")
    calls = []
    for call in _items(message, "tool_calls", "message"):
        function = _get(call, "function")
        if not _is_object(function):
            continue
        extra = _get(call, "extra_content")
        calls.append(
            tool_call_dict(
                _optional(call, "id", str, "tool_call") or "",
                _optional(function, "name", str, "function") or "",
                _optional(function, "arguments", str, "function") or "",
                extra if isinstance(extra, dict) else None,
            )
        )
    assembler = StreamAssembler()
    assembler.feed_whole(message)
    content = assembler.text or _optional(message, "refusal", str, "message")
    finish = _optional(choice, "finish_reason", str, "choice")
    reply = assistant_message(
        content or None,
        unique_call_ids(calls),
        assembler.reasoning,
        assembler.details,
        assembler.reasoning_field,
    )
    return LLMResponse(reply, finish, usage, model)
