"""Exact token counting with tiktoken, offline (docs/architecture.md §3).

The encodings and their files are context/counting/encodings.py. Message and tool-schema arithmetic follows the
OpenAI Cookbook ("How to count tokens with tiktoken"), with conservative extras where the Cookbook is
silent (tool calls, nested schemas) so a request is never under-counted.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from catbuddy.context.counting.bpe import NeedsRust, PythonBpe
from catbuddy.context.counting.encodings import (
    load_encoding,
    load_python_encoding,
)
from catbuddy.messages import content_text
from catbuddy.model_encodings import encoding_name_for_model

log = logging.getLogger(__name__)

# Cookbook constants for gpt-4o-class chat models.
TOKENS_PER_MESSAGE = 3  # <|start|>{role}<|message|>…<|end|>, besides the role itself
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3  # every reply is primed with <|start|>assistant<|message|>
# Not in the Cookbook: the framing of one tool call inside an assistant message. Deliberately generous.
TOKENS_PER_TOOL_CALL = 8
FALLBACK_CHARS_PER_TOKEN = 3
MESSAGE_CACHE_LIMIT = 200_000
TOOLS_CACHE_LIMIT = 64  # distinct tool sets remembered (MCP servers come and go)
# Characters the Python encoder counts before building tiktoken's Rust one (~0.2 s) is worth it: Python
# costs ~0.25 µs a character more, so the most it can waste is ~0.08 s.
QUICK_BUDGET_CHARS = 300_000


@dataclass(frozen=True)
class ToolSchemaCosts:
    """Per-function constants from the Cookbook's ``num_tokens_for_tools``."""

    func_init: int
    prop_init: int = 3
    prop_key: int = 3
    enum_init: int = -3
    enum_item: int = 3
    func_end: int = 12


TOOL_COSTS = {"o200k_base": ToolSchemaCosts(func_init=7), "cl100k_base": ToolSchemaCosts(func_init=10)}


class _Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


class _ApproximateEncoder:
    """Used only when tiktoken cannot start: one token per three characters, rounded up."""

    def encode_ordinary(self, text: str) -> list[int]:
        return [0] * math.ceil(len(text) / FALLBACK_CHARS_PER_TOKEN)


@dataclass
class RequestCount:
    """A request's count, broken down: what `catbuddy count --json` prints."""

    messages: list[int]
    tools_tokens: int
    priming: int = REPLY_PRIMING
    total: int = field(init=False)

    def __post_init__(self) -> None:
        self.total = sum(self.messages) + self.tools_tokens + (self.priming if self.messages else 0)


class TokenCounter:
    """Counts chat requests exactly for one encoding; per-message counts are cached.

    Nothing loads at construction: building a turn's collaborators costs nothing, and a first request that
    is provably small goes out before any tokenizer (``context/governance/bound.py``). The first counts use tiktoken's
    algorithm in Python (``context/counting/bpe.py``, ~0.06 s to start). Past ``QUICK_BUDGET_CHARS``, or for a text
    it does not take (a long piece, a character too new), tiktoken's Rust encoder loads (~0.3 s) and counts
    from then on; ``load()`` asks for it outright (the TUI's warm-up thread). Both give the same counts."""

    def __init__(self, encoding_name: str) -> None:
        self.encoding_name = encoding_name
        self.cache_key = encoding_name  # what cached per-prompt counts are filed under
        self._exact = True
        self._encoder: _Encoder | None = None  # tiktoken's Rust encoder, or whatever stands in for it
        self._quick: PythonBpe | None = None
        self._quick_chars = 0
        self._load_lock = threading.Lock()
        self._costs = TOOL_COSTS.get(encoding_name, TOOL_COSTS["o200k_base"])
        self._message_cache: dict[tuple[Any, ...], int] = {}
        # Fast path for the same message object seen again (the history stays in memory turn after
        # turn): id → (message, count). Holding the message keeps its id from being reused.
        self._by_identity: dict[int, tuple[Mapping[str, Any], int]] = {}
        self._tools_cache: dict[str, int] = {}

    @property
    def loaded(self) -> bool:
        """Whether a count can start without loading anything."""
        return self._encoder is not None or self._quick is not None

    @property
    def exact(self) -> bool:
        """False when tiktoken could not start and counts are estimates (loads the tokenizer)."""
        if self._encoder is None and self._quick is not None:
            return True  # the Python encoder is exact
        self.load()
        return self._exact

    def ready(self) -> None:
        """Make counting possible at the least cost: the Python encoder, unless one is loaded already
        (safe from a worker thread)."""
        if self.loaded:
            return
        with self._load_lock:
            if self._encoder is None and self._quick is None:
                try:
                    self._quick = load_python_encoding(self.encoding_name)
                except Exception as exc:  # `regex` or the ranks missing: load() says what is wrong
                    log.debug("the Python encoder cannot start (%s)", exc)

    def load(self) -> _Encoder:
        """tiktoken's Rust encoder, loaded once (safe to call from a worker thread while the loop counts)."""
        encoder = self._encoder
        if encoder is not None:
            return encoder
        with self._load_lock:
            if self._encoder is None:
                try:
                    self._encoder = load_encoding(self.encoding_name)
                except Exception as exc:  # any failure to start tiktoken must not stop catbuddy
                    self._encoder = self._stand_in(exc)
            return self._encoder

    def _stand_in(self, exc: Exception) -> _Encoder:
        if self._quick is not None:  # slower for long pieces, but exact
            log.warning("tiktoken unavailable (%s); counting with its algorithm in Python", exc)
            return load_python_encoding(self.encoding_name, bounded=False)
        log.warning("tiktoken unavailable (%s); estimating tokens as characters / 3", exc)
        self._exact = False
        return _ApproximateEncoder()

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        encoder = self._encoder
        if encoder is None:
            if self._quick is None:
                self.ready()
            quick = self._quick
            if quick is not None and self._quick_chars + len(text) <= QUICK_BUDGET_CHARS:
                try:
                    count = len(quick.encode_ordinary(text))
                except NeedsRust:
                    pass  # tiktoken's Rust encoder takes it from here
                else:
                    self._quick_chars += len(text)
                    return count
            encoder = self.load()
        return len(encoder.encode_ordinary(text))

    def count_message(self, message: Mapping[str, Any]) -> int:
        """Cached: messages are never edited in place (a changed message is a new dict), so a
        message object's count, like its content's, never changes."""
        seen = self._by_identity.get(id(message))
        if seen is not None and seen[0] is message:
            return seen[1]
        key = _message_key(message)
        cached = self._message_cache.get(key)
        if cached is None:
            cached = self._count_message_uncached(message)
            if len(self._message_cache) >= MESSAGE_CACHE_LIMIT:
                self._message_cache.clear()
            self._message_cache[key] = cached
        if len(self._by_identity) >= MESSAGE_CACHE_LIMIT:
            self._by_identity.clear()
        self._by_identity[id(message)] = (message, cached)
        return cached

    def _count_message_uncached(self, message: Mapping[str, Any]) -> int:
        total = TOKENS_PER_MESSAGE + self.count_text(str(message.get("role", "")))
        total += self.count_text(content_text(message.get("content")))
        # An assistant message's stored reasoning (catbuddy.llm.reasoning), in the field it came in.
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            total += self.count_text(reasoning)
        if message.get("name"):
            total += self.count_text(str(message["name"])) + TOKENS_PER_NAME
        if message.get("tool_call_id"):
            total += self.count_text(str(message["tool_call_id"]))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            total += TOKENS_PER_TOOL_CALL
            total += self.count_text(str(call.get("id", "")))
            total += self.count_text(str(function.get("name", "")))
            total += self.count_text(_arguments_text(function.get("arguments")))
        return total

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Messages plus reply priming: the prompt side of a request without tools."""
        total = 0
        seen = False
        for message in messages:
            total += self.count_message(message)
            seen = True
        return total + (REPLY_PRIMING if seen else 0)

    def count_tools(self, tools: Sequence[Mapping[str, Any]] | None) -> int:
        """Tool schemas as the Cookbook counts functions, plus anything the Cookbook leaves out.

        Every request carries the schemas but they rarely change, so counts are remembered, keyed on
        their JSON (cheaper than encoding every description again)."""
        if not tools:
            return 0
        key = json.dumps(tools, sort_keys=True, ensure_ascii=False, default=str)
        cached = self._tools_cache.get(key)
        if cached is None:
            if len(self._tools_cache) >= TOOLS_CACHE_LIMIT:
                self._tools_cache.clear()
            cached = self._tools_cache[key] = self._count_tools_uncached(tools)
        return cached

    def _count_tools_uncached(self, tools: Sequence[Mapping[str, Any]]) -> int:
        costs = self._costs
        total = 0
        for tool in tools:
            function = tool.get("function", tool)
            total += costs.func_init
            description = str(function.get("description") or "").removesuffix(".")
            total += self.count_text(f"{function.get('name', '')}:{description}")
            parameters = function.get("parameters") or {}
            properties = parameters.get("properties") or {}
            if properties:
                total += costs.prop_init
                for key, prop in properties.items():
                    total += costs.prop_key
                    prop = prop if isinstance(prop, Mapping) else {}
                    if "enum" in prop:
                        total += costs.enum_init
                        for item in prop["enum"]:
                            total += costs.enum_item + self.count_text(str(item))
                    p_desc = str(prop.get("description") or "").removesuffix(".")
                    total += self.count_text(f"{key}:{prop.get('type', '')}:{p_desc}")
                    extra = {k: v for k, v in prop.items() if k not in ("type", "description", "enum")}
                    if extra:  # nested objects, arrays, defaults: the Cookbook ignores them, we don't
                        total += self.count_text(json.dumps(extra, ensure_ascii=False))
            extra_params = {
                k: v for k, v in parameters.items() if k not in ("type", "properties", "required")
            }
            if extra_params:
                total += self.count_text(json.dumps(extra_params, ensure_ascii=False))
        return total + costs.func_end

    def count_request(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> int:
        return self.breakdown(messages, tools).total

    def breakdown(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> RequestCount:
        return RequestCount([self.count_message(m) for m in messages], self.count_tools(tools))


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def _message_key(message: Mapping[str, Any]) -> tuple[Any, ...]:
    # Python caches each str's hash on the object, so keying on the strings themselves is cheap for
    # messages that stay in memory turn after turn.
    content = message.get("content")
    if not isinstance(content, str | None):
        content = content_text(content)
    calls = message.get("tool_calls")
    call_key: tuple[Any, ...] = ()
    if calls:
        call_key = tuple(
            (
                c.get("id"),
                (c.get("function") or {}).get("name"),
                _arguments_text((c.get("function") or {}).get("arguments")),
            )
            for c in calls
        )
    return (
        message.get("role"),
        content,
        message.get("name"),
        message.get("tool_call_id"),
        call_key,
        message.get("reasoning_content") or message.get("reasoning"),
    )


_COUNTERS: dict[str, TokenCounter] = {}


def counter_for(encoding_name: str) -> TokenCounter:
    """One shared counter per encoding, so its message cache serves every caller."""
    counter = _COUNTERS.get(encoding_name)
    if counter is None:
        counter = _COUNTERS[encoding_name] = TokenCounter(encoding_name)
    return counter


def counter_for_model(model: str, default_encoding: str = "o200k_base") -> TokenCounter:
    return counter_for(encoding_name_for_model(model, default_encoding))
