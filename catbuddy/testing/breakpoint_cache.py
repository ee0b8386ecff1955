"""A simulated Anthropic-style prompt cache: only what explicit ``cache_control`` breakpoints mark is cached.

How Claude's cache works (docs.claude.com, "Prompt caching"), and so how this one does: a request is
laid out tools → system → messages; each part marked with ``cache_control`` is a breakpoint, and the
prefix up to it is written to the cache (billed 1.25× input) once it is at least ``min_tokens`` long.
A later request reads (billed 0.1×) the longest cached prefix found at one of its own breakpoints or up
to ``lookback`` parts before one. A request without breakpoints caches nothing and reads nothing,
however often its prefix repeats — what a Claude model behind an OpenAI-compatible gateway pays when
the client never marks anything.

``served(body, prompt_tokens, count_text)`` answers ``(read, written)`` prompt tokens and remembers
the request's breakpoint prefixes.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from catbuddy.testing.prefix_cache import _chain, request_parts

DEFAULT_MIN_TOKENS = 1024  # Claude Sonnet / Opus cache prefixes of 1,024 tokens or more
DEFAULT_LOOKBACK = 20  # parts checked before each breakpoint for an earlier cached prefix
DEFAULT_TTL_SECONDS = 300.0  # 5 minutes, refreshed by every read
MARK = '"cache_control"'
COUNT_MEMO_LIMIT = 50_000


@dataclass
class BreakpointCache:
    min_tokens: int = DEFAULT_MIN_TOKENS
    lookback: int = DEFAULT_LOOKBACK
    ttl_seconds: float = DEFAULT_TTL_SECONDS
    clock: Callable[[], float] = time.monotonic
    _entries: dict[bytes, float] = field(default_factory=dict)  # prefix hash → last used
    _counts: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def served(
        self, body: Mapping[str, Any], prompt_tokens: int, count_text: Callable[[str], int]
    ) -> tuple[int, int]:
        marks = [i for i, part in enumerate(request_parts(body)) if MARK in part]
        # A marker is not part of what is cached: the same blocks with or without one are one prefix
        # (and a string content is one text block), as at Anthropic.
        parts = request_parts(_unmarked(body))
        chain = _chain(str(body.get("model") or ""), parts)
        cumulative = []
        total = 0
        for part in parts:
            total += self._count(part, count_text)
            cumulative.append(total)
        if not marks or not total:
            return 0, 0
        now = self.clock()
        with self._lock:
            hit = -1
            for mark in marks:
                for index in range(mark, max(-1, mark - self.lookback - 1), -1):
                    if self._live(chain[index + 1], now):
                        hit = max(hit, index)
                        break
            if hit >= 0:
                self._entries[chain[hit + 1]] = now
            read = cumulative[hit] if hit >= 0 else 0
            written_to = read
            for mark in marks:
                if cumulative[mark] >= self.min_tokens:
                    self._entries[chain[mark + 1]] = now
                    written_to = max(written_to, cumulative[mark])
        scale = prompt_tokens / total  # the server's reported tokens include per-message framing
        read_tokens = math.floor(read * scale)
        return read_tokens, max(0, math.floor(written_to * scale) - read_tokens)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _live(self, key: bytes, now: float) -> bool:
        used = self._entries.get(key)
        return used is not None and now - used <= self.ttl_seconds

    def _count(self, part: str, count_text: Callable[[str], int]) -> int:
        known = self._counts.get(part)
        if known is None:
            if len(self._counts) >= COUNT_MEMO_LIMIT:
                self._counts.clear()
            known = self._counts[part] = count_text(part)
        return known


def _unmarked_block(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, Mapping) else block


def _unmarked(body: Mapping[str, Any]) -> dict[str, Any]:
    messages = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content else []
        elif isinstance(content, list):
            content = [_unmarked_block(block) for block in content]
        messages.append({**message, "content": content})
    tools = [_unmarked_block(tool) for tool in body.get("tools") or []]
    return {**body, "messages": messages, "tools": tools}
