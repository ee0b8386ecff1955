"""What a session has cost: the provider's usage reports summed from the session file's ``usage`` events.

Prompt tokens, the share of them the provider served from its prompt cache, and output tokens — what
``/context`` and ``catbuddy context --session`` show, with a cost when the model has a configured price.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from catbuddy.config import ModelPrice
from catbuddy.session.records import EventRecord

USAGE_KIND = "usage"


@dataclass(frozen=True)
class SessionUsage:
    calls: int = 0  # model calls that reported usage
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    last_prompt_tokens: int = 0
    last_cached_tokens: int = 0
    cache_write_tokens: int = 0  # prompt tokens written to an Anthropic-style cache (billed above input)
    reasoning_tokens: int = 0  # of the completion tokens, those spent reasoning

    @property
    def hit_rate(self) -> float:
        """Share of all prompt tokens served from the cache (0.0 when nothing was reported)."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def last_hit_rate(self) -> float | None:
        return self.last_cached_tokens / self.last_prompt_tokens if self.last_prompt_tokens else None

    def add(
        self,
        prompt_tokens: int,
        cached_tokens: int,
        completion_tokens: int,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
    ) -> SessionUsage:
        cached = min(max(cached_tokens, 0), prompt_tokens)
        written = min(max(cache_write_tokens, 0), prompt_tokens - cached)
        return SessionUsage(
            calls=self.calls + 1,
            prompt_tokens=self.prompt_tokens + prompt_tokens,
            cached_tokens=self.cached_tokens + cached,
            completion_tokens=self.completion_tokens + completion_tokens,
            last_prompt_tokens=prompt_tokens,
            last_cached_tokens=cached,
            cache_write_tokens=self.cache_write_tokens + written,
            reasoning_tokens=self.reasoning_tokens + max(reasoning_tokens, 0),
        )

    def add_report(self, data: Mapping[str, Any]) -> SessionUsage:
        """Add one ``usage`` event's data; a report without prompt tokens adds nothing."""
        prompt = _int(data.get("prompt_tokens"))
        if not prompt:
            return self
        return self.add(
            prompt,
            _int(data.get("cached_tokens")),
            _int(data.get("completion_tokens")),
            _int(data.get("cache_write_tokens")),
            _int(data.get("reasoning_tokens")),
        )

    def cost(self, price: ModelPrice | None) -> float | None:
        if price is None or not self.calls:
            return None
        return price.cost(
            self.prompt_tokens, self.cached_tokens, self.completion_tokens, self.cache_write_tokens
        )

    def to_dict(self, price: ModelPrice | None = None) -> dict[str, Any]:
        data = asdict(self)
        data["hit_rate"] = round(self.hit_rate, 4)
        cost = self.cost(price)
        if cost is not None:
            data["estimated_cost_usd"] = round(cost, 6)
        return data

    def describe(self, price: ModelPrice | None = None) -> str:
        """One line, e.g. "session usage: 12 calls, prompt 84,200 tokens (71,000 cached, 84%), output 2,100"."""
        if not self.calls:
            return "session usage: no model call reported usage yet"
        line = (
            f"session usage: {self.calls:,} call{'' if self.calls == 1 else 's'}, prompt {self.prompt_tokens:,} "
            f"tokens ({self.cached_tokens:,} cached, {self.hit_rate:.0%}"
            + (f"; {self.cache_write_tokens:,} written to the cache" if self.cache_write_tokens else "")
            + f"), output {self.completion_tokens:,}"
            + (f" ({self.reasoning_tokens:,} reasoning)" if self.reasoning_tokens else "")
        )
        cost = self.cost(price)
        return line + (f"; estimated cost ${cost:,.4f}" if cost is not None else "")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def usage_of(records: Iterable[Any]) -> SessionUsage:
    """Sum the usage events among a session file's records (other records are ignored)."""
    usage = SessionUsage()
    for record in records:
        if isinstance(record, EventRecord) and record.kind == USAGE_KIND:
            usage = usage.add_report(record.data)
    return usage
