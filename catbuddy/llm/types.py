"""What a provider call yields: text as it streams, and at the end one complete response.

Also the assembly of streamed chunks (text deltas, tool-call deltas by index, the usage chunk) into
that response. Works on the openai SDK's chunk objects by attribute, so this module imports nothing
heavy.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None = None  # prompt tokens served from the provider's prompt cache

    @classmethod
    def from_sdk(cls, usage: Any) -> Usage | None:
        if usage is None:
            return None
        details = getattr(usage, "prompt_tokens_details", None)
        return cls(
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            cached_tokens=getattr(details, "cached_tokens", None) if details is not None else None,
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


@dataclass(frozen=True)
class TextChunk:
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


ProviderEvent = TextChunk | ToolCallProgress | Completed


@dataclass
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    chars: int = 0


def assistant_message(content: str | None, calls: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    return message


def tool_call_dict(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    # Some local servers omit ids or send "" for a call without arguments; the API wants both.
    return {
        "id": call_id or f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": name, "arguments": arguments or "{}"},
    }


class StreamAssembler:
    """Feeds on ``chat.completion.chunk`` objects; ``response()`` gives the assembled reply."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, _CallParts] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None

    def feed(self, chunk: Any) -> list[TextChunk | ToolCallProgress]:
        events: list[TextChunk | ToolCallProgress] = []
        self.model = getattr(chunk, "model", None) or self.model
        usage = getattr(chunk, "usage", None)
        if usage is not None:  # the include_usage chunk (some servers put it on the last choice chunk)
            self.usage = Usage.from_sdk(usage)
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) not in (0, None):
                continue  # we ask for one choice; ignore any other
            delta = getattr(choice, "delta", None)
            if delta is not None:
                text = getattr(delta, "content", None) or getattr(delta, "refusal", None)
                if text:
                    self._text.append(text)
                    events.append(TextChunk(text))
                for call_delta in getattr(delta, "tool_calls", None) or ():
                    events.append(self._feed_call(call_delta))
            if getattr(choice, "finish_reason", None):
                self.finish_reason = choice.finish_reason
        return events

    def _feed_call(self, delta: Any) -> ToolCallProgress:
        index = getattr(delta, "index", None)
        call_id = getattr(delta, "id", None)
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
        function = getattr(delta, "function", None)
        if function is not None:
            if getattr(function, "name", None):
                parts.name = function.name
            fragment = getattr(function, "arguments", None)
            if fragment:
                parts.arguments.append(fragment)
                parts.chars += len(fragment)
        return ToolCallProgress(index, parts.id, parts.name, parts.chars)

    def response(self) -> LLMResponse:
        calls = [
            tool_call_dict(parts.id, parts.name, "".join(parts.arguments))
            for _, parts in sorted(self._calls.items())
        ]
        return LLMResponse(
            assistant_message("".join(self._text), calls), self.finish_reason, self.usage, self.model
        )


def response_from_completion(completion: Any) -> LLMResponse:
    """An ``LLMResponse`` from a non-streamed ``chat.completion``."""
    choices = getattr(completion, "choices", None) or []
    usage = Usage.from_sdk(getattr(completion, "usage", None))
    model = getattr(completion, "model", None)
    if not choices:
        return LLMResponse(assistant_message(None, []), None, usage, model)
    choice = choices[0]
    message = choice.message
    calls = [
        tool_call_dict(call.id, call.function.name, call.function.arguments)
        for call in (getattr(message, "tool_calls", None) or [])
        if getattr(call, "function", None) is not None
    ]
    content = getattr(message, "content", None) or getattr(message, "refusal", None)
    return LLMResponse(assistant_message(content, calls), choice.finish_reason, usage, model)
