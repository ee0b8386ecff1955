"""Reasoning ("thinking") in streamed replies: every shape real providers send it in, kept apart from
the answer.

Shapes, as recorded from real providers (``tests/data/provider_recordings``):

- ``delta.reasoning_content`` (DeepSeek, Kimi, xAI, Z.ai, Qwen, llama.cpp's gpt-oss);
- ``delta.reasoning`` (OpenRouter, Vercel's gateway, Groq's gpt-oss);
- ``delta.reasoning_details``: a list of typed items (``reasoning.text`` with a ``signature``,
  ``reasoning.encrypted`` with opaque ``data``, ``reasoning.summary``) that OpenRouter and Vercel want
  back verbatim; streamed in fragments that share an ``index``, merged here;
- a leading ``<think>…</think>`` inside ``content`` (R1-style servers and routers);
- ``content`` given as a list of parts (Mistral's Magistral: ``thinking`` and ``text`` parts).

An assistant message keeps its reasoning verbatim under the provider's own field names: the text as
``reasoning_content`` when it came in that field, else as ``reasoning``; the items as
``reasoning_details``. What goes back to which provider is decided in ``catbuddy.llm.reasoning_policy``;
nothing here ever mixes reasoning into the answer text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REASONING = "reasoning"  # the stored message's reasoning text (OpenRouter's, Groq's, <think>, Magistral)
REASONING_CONTENT = "reasoning_content"  # …or this, when the provider sent it so (DeepSeek, Kimi, xAI, Z.ai)
REASONING_DETAILS = "reasoning_details"  # the stored message's reasoning items, verbatim
REASONING_KEYS = (REASONING, REASONING_CONTENT, REASONING_DETAILS)
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
# Fields of a reasoning item whose streamed fragments are concatenated; any other field is set once.
_JOINED_FIELDS = ("text", "summary", "data")


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None)  # pydantic keeps unknown fields here
        if isinstance(extra, Mapping):
            value = extra.get(name)
    return value


def _plain(value: Any) -> Any:
    """A JSON value from an SDK object (the SDK keeps unknown fields as dicts, or as models)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def delta_reasoning_text(delta: Any) -> tuple[str, str]:
    """(field, text) of one delta's reasoning: ``reasoning_content`` or ``reasoning`` (a string; any
    other shape is skipped: unknown reasoning shapes are never fatal). ("", "") when there is none."""
    for name in (REASONING_CONTENT, REASONING):
        value = _get(delta, name)
        if isinstance(value, str) and value:
            return name, value
    return "", ""


def delta_reasoning_items(delta: Any) -> list[dict[str, Any]]:
    """``reasoning_details`` items of one delta, as plain dicts (anything but a list of objects: none)."""
    value = _get(delta, REASONING_DETAILS)
    if not isinstance(value, list | tuple):
        return []
    return [item for item in (_plain(v) for v in value) if isinstance(item, dict)]


def content_parts(parts: list[Any]) -> tuple[str, str]:
    """(text, reasoning) of ``content`` given as a list of parts: ``text`` parts are the answer,
    ``thinking`` parts (a string, or a list of text parts) the reasoning; any other part is skipped."""
    text: list[str] = []
    reasoning: list[str] = []
    for part in (_plain(p) for p in parts):
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            text.append(part["text"])
        elif kind == "thinking":
            reasoning.append(_thinking_text(part.get("thinking")))
    return "".join(text), "".join(reasoning)


def _thinking_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            str(item.get("text", ""))
            for item in value
            if isinstance(item, dict) and item.get("type") == "text"
        )
    return ""


class DetailsMerger:
    """Merges streamed ``reasoning_details`` fragments: items with the same ``index`` and ``type`` are
    one item whose ``text``/``summary``/``data`` arrive in pieces (other fields, e.g. a ``signature``,
    arrive once and are kept as sent)."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self._by_key: dict[tuple[Any, Any], dict[str, Any]] = {}

    def feed(self, items: list[dict[str, Any]]) -> None:
        for item in items:
            index = item.get("index")
            key = (index, item.get("type"))
            known = self._by_key.get(key) if index is not None else None
            if known is None:
                copy = dict(item)
                self.items.append(copy)
                if index is not None:
                    self._by_key[key] = copy
                continue
            for name, value in item.items():
                if name in _JOINED_FIELDS and isinstance(value, str) and isinstance(known.get(name), str):
                    known[name] += value
                elif value is not None and known.get(name) is None:
                    known[name] = value

    @property
    def text(self) -> str:
        """The readable part of the items (text and summaries), for a provider that sent no plain text."""
        out = []
        for item in self.items:
            for name in ("text", "summary"):
                if isinstance(item.get(name), str):
                    out.append(item[name])
        return "".join(out)


class ThinkSplitter:
    """Splits a leading ``<think>…</think>`` off streamed content: only at the very start of the reply
    (after whitespace), so a ``<think>`` the model writes later in its answer stays text."""

    def __init__(self) -> None:
        self._state = "start"  # start → think → answer, or start → answer
        self._pending = ""

    def feed(self, piece: str) -> tuple[str, str]:
        """(text, reasoning) ready to show after ``piece``; a possible tag's start is held back."""
        self._pending += piece
        if self._state == "start":
            head = self._pending.lstrip()
            if not head or (THINK_OPEN.startswith(head) and head != THINK_OPEN):
                return "", ""  # could still become the tag
            if not head.startswith(THINK_OPEN):
                self._state = "answer"
                text, self._pending = self._pending, ""
                return text, ""
            self._state = "think"
            self._pending = head[len(THINK_OPEN) :]
        if self._state == "think":
            end = self._pending.find(THINK_CLOSE)
            if end < 0:
                keep = _partial_suffix(self._pending, THINK_CLOSE)
                reasoning = self._pending[: len(self._pending) - keep]
                self._pending = self._pending[len(self._pending) - keep :]
                return "", reasoning
            reasoning = self._pending[:end]
            self._pending = self._pending[end + len(THINK_CLOSE) :].lstrip()
            self._state = "answer" if self._pending else "after"
            text, self._pending = self._pending, ""
            return text, reasoning
        if self._state == "after":  # whitespace right after the tag is not part of the answer
            text = self._pending.lstrip()
            if text:
                self._state = "answer"
            self._pending = ""
            return text, ""
        text, self._pending = self._pending, ""
        return text, ""

    def flush(self) -> tuple[str, str]:
        """What is held back when the stream ends: an unfinished tag start is text, an unclosed
        thought is reasoning."""
        pending, self._pending = self._pending, ""
        if self._state == "think":
            return "", pending
        if self._state == "start":
            return pending, ""
        return pending if self._state == "answer" else "", ""


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that is a proper start of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


def strip_reasoning(message: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` without its reasoning (the same object when it has none)."""
    if not any(key in message for key in REASONING_KEYS):
        return message if isinstance(message, dict) else dict(message)
    return {k: v for k, v in message.items() if k not in REASONING_KEYS}


def reasoning_text(message: Mapping[str, Any]) -> str:
    """A stored message's reasoning text, whichever field it came in."""
    for name in (REASONING_CONTENT, REASONING):
        value = message.get(name)
        if isinstance(value, str) and value:
            return value
    return ""
