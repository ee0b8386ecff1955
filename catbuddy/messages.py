"""Helpers on OpenAI chat messages that every layer shares (assembly, counting, storage, front ends).

Kept apart from the context builder so that storage and front ends can read a message without
depending on how prompts are assembled (docs/architecture.md §9).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from catbuddy.text import valid_text

RUNTIME_BLOCK_RE = re.compile(r"\n\n\[runtime: [^\]\n]*\]\s*\Z")


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text of its parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            else:
                texts.append(json.dumps(part, ensure_ascii=False, sort_keys=True))
        return "\n".join(texts)
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def runtime_block(time_iso: str, channel: str) -> str:
    """The volatile facts appended to a user message (never to the system prompt)."""
    return f"[runtime: time={time_iso}, channel={channel}]"


def with_runtime_block(text: str, block: str) -> str:
    return f"{text}\n\n{block}"


def strip_runtime_block(text: str) -> str:
    """The user's own words: a stored user message without its trailing ``[runtime: …]`` block."""
    return RUNTIME_BLOCK_RE.sub("", text)


def valid_json(value: Any) -> Any:
    """A copy of a JSON-like value (a message, a request body) whose every string is valid UTF-8 text
    (``catbuddy.text.valid_text``): the one sanitiser, applied deep. Unchanged values are shared."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, Mapping):
        return {valid_text(k) if isinstance(k, str) else k: valid_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [valid_json(v) for v in value]
    return value


INVALID_ARGUMENTS_SENT_AS = "{}"  # what a call with arguments that are not a JSON object is sent back as


def arguments_are_valid(arguments: Any) -> bool:
    """Whether a tool call's ``arguments`` string is a JSON object (what strict gateways demand)."""
    if not isinstance(arguments, str):
        return False
    try:
        return isinstance(json.loads(arguments), dict)
    except (ValueError, RecursionError):
        return False


def with_valid_arguments(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's messages with every tool call's arguments a JSON object: a call whose arguments
    were not (the model's mistake, answered by an error result quoting them) is sent back with
    ``{}``, since strict gateways reject the whole request otherwise. The stored history keeps the
    raw text; unchanged messages are the same objects (the token counter's cache keeps hitting)."""
    fixed: list[dict[str, Any]] = []
    for message in messages:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if calls and any(not arguments_are_valid(_arguments(call)) for call in calls):
            message = {**message, "tool_calls": [_with_valid_arguments(call) for call in calls]}
        fixed.append(message)
    return fixed


def _arguments(call: Any) -> Any:
    function = call.get("function") if isinstance(call, Mapping) else None
    return function.get("arguments") if isinstance(function, Mapping) else None


def _with_valid_arguments(call: Any) -> Any:
    if arguments_are_valid(_arguments(call)) or not isinstance(call, Mapping):
        return call
    return {**call, "function": {**call.get("function", {}), "arguments": INVALID_ARGUMENTS_SENT_AS}}
