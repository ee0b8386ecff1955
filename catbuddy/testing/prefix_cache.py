"""A simulated provider prompt cache for the scripted server: which prompt tokens a real one would serve.

Providers cache the longest prefix of a request they have seen before (OpenAI: per model, in blocks of
128 tokens once the prompt has 1,024 or more, for a few minutes of idle time). The request is read the way
a provider lays it out — tool schemas first, then the messages in order — and a prefix counts as seen
when an earlier request, still in the cache, began with exactly the same bytes. A change anywhere (one
character of an old tool result) ends the cached prefix there, as it does at a real provider.

Seen prefixes are kept as a chain of hashes, one link per part (the tool schemas, then each message), so
a lookup costs one hash per part; within the first part that differs, the characters it shares with a
part that followed the same chain before still count.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MIN_TOKENS = 1024  # OpenAI caches prompts of 1,024 tokens or more…
DEFAULT_BLOCK_TOKENS = 128  # …in increments of 128 tokens
DEFAULT_TTL_SECONDS = 300.0  # idle time after which a prefix is evicted
MAX_FOLLOWERS = 4  # parts remembered after one chain link, for partial matches within a part


@dataclass
class _Link:
    last_used: float
    tokens: int  # tokens of the parts up to and including this link's
    followers: list[str] = field(default_factory=list)  # parts that came next after this prefix


@dataclass
class PrefixCache:
    """Thread-safe. ``served(body, prompt_tokens, count_text)`` answers the cached tokens and stores the
    request's prefixes. ``count_text`` is the server's tokenizer, so cached ≤ prompt tokens always."""

    min_tokens: int = DEFAULT_MIN_TOKENS
    block_tokens: int = DEFAULT_BLOCK_TOKENS
    ttl_seconds: float = DEFAULT_TTL_SECONDS
    clock: Callable[[], float] = time.monotonic
    _links: dict[bytes, _Link] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _last_sweep: float = 0.0

    def served(self, body: Mapping[str, Any], prompt_tokens: int, count_text: Callable[[str], int]) -> int:
        parts = request_parts(body)
        chain = _chain(str(body.get("model") or ""), parts)
        now = self.clock()
        with self._lock:
            self._sweep(now)
            matched = 0
            while matched < len(parts) and self._live(chain[matched + 1], now):
                matched += 1
            head = self._links.get(chain[matched]) if self._live(chain[matched], now) else None
            shared = head.tokens if head is not None and matched else 0
            if head is not None and matched < len(parts) and head.followers:
                common = max(_common_prefix(parts[matched], other) for other in head.followers)
                shared += count_text(parts[matched][:common]) if common else 0
            total = self._store(chain, parts, matched, now, count_text)
        # Scale to the prompt tokens the server reports (they include per-message framing).
        cached = math.floor(prompt_tokens * min(1.0, shared / total)) if total else 0
        cached -= cached % self.block_tokens
        return cached if cached >= self.min_tokens else 0

    def clear(self) -> None:
        with self._lock:
            self._links.clear()

    def _live(self, link: bytes, now: float) -> bool:
        entry = self._links.get(link)
        return entry is not None and now - entry.last_used <= self.ttl_seconds

    def _store(
        self, chain: list[bytes], parts: list[str], matched: int, now: float, count_text: Callable[[str], int]
    ) -> int:
        """Remember every prefix of this request; returns its total tokens. Only unseen parts are counted."""
        tokens = 0
        for index, link in enumerate(chain):
            entry = self._links.get(link)
            if entry is None or index > matched:
                tokens += count_text(parts[index - 1]) if index else 0
                entry = self._links[link] = _Link(now, tokens)
            else:
                tokens = entry.tokens
            entry.last_used = now
            if index < len(parts) and parts[index] not in entry.followers:
                entry.followers.append(parts[index])
                del entry.followers[:-MAX_FOLLOWERS]
        return tokens

    def _sweep(self, now: float) -> None:
        # Evict in sweeps, not per request: a lookup treats an expired link as absent anyway.
        if now - self._last_sweep < self.ttl_seconds:
            return
        self._last_sweep = now
        stale = [key for key, link in self._links.items() if now - link.last_used > self.ttl_seconds]
        for key in stale:
            del self._links[key]


def request_parts(body: Mapping[str, Any]) -> list[str]:
    """The request as a provider lays it out: the tool schemas, then each message, each as exact JSON."""
    tools = body.get("tools") or []
    messages: Sequence[Any] = body.get("messages") or []
    return [_canonical(tools)] + [_canonical(message) for message in messages]


def _canonical(value: Any) -> str:
    # Key order as sent: a client that reorders keys really does break a provider's cache.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _chain(model: str, parts: Sequence[str]) -> list[bytes]:
    """chain[i] identifies the first i parts (chain[0] the model alone)."""
    digest = hashlib.sha256(model.encode()).digest()
    chain = [digest]
    for part in parts:
        digest = hashlib.sha256(digest + part.encode()).digest()
        chain.append(digest)
    return chain


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    low, high = 0, limit
    while low < high:  # binary search on slices: C-speed comparisons instead of a Python loop
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low
