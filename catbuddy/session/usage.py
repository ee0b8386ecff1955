"""What a session has cost: the provider's usage reports summed from the session file's ``usage`` events.

Prompt tokens, the share of them the provider served from its prompt cache, and output tokens — what
``/context`` and ``catbuddy context --session`` show, with a cost when the model has a configured price.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, astuple, dataclass, replace
from typing import Any

from catbuddy.config import ModelPrice
from catbuddy.session.records import EventRecord

USAGE_KIND = "usage"
SUBAGENT_KIND = "subagent"  # a subagent's finished run: its ``usage`` (summed) rolls up into the session's


@dataclass(frozen=True)
class ModelTokens:
    """The billable figures of the calls made on one model."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    cache_write_tokens: int = 0

    def plus(self, other: ModelTokens) -> ModelTokens:
        return ModelTokens(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def minus(self, other: ModelTokens) -> ModelTokens:
        return ModelTokens(*(max(0, a - b) for a, b in zip(astuple(self), astuple(other), strict=True)))

    def cost(self, price: ModelPrice) -> float:
        return price.cost(self.prompt_tokens, self.cached_tokens, self.completion_tokens, self.cache_write_tokens)


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
    # The same figures per model, for the calls whose record names one (a subagent on its own model, a
    # session after /model); a call recorded without a model is priced at the session's model.
    models: tuple[tuple[str, ModelTokens], ...] = ()

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
        model: str = "",
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
            models=self._on_model(model, ModelTokens(prompt_tokens, cached, completion_tokens, written)),
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
            _name(data.get("model")),
        )

    def add_rollup(self, data: Mapping[str, Any]) -> SessionUsage:
        """Add a subagent's summed usage (a ``subagent`` event's ``usage``, on its ``model``); the last-call
        figures stay the parent's own (they describe the parent's window)."""
        usage = data.get("usage")
        if not isinstance(usage, Mapping) or not _int(usage.get("prompt_tokens")):
            return self
        prompt = _int(usage.get("prompt_tokens"))
        cached = min(_int(usage.get("cached_tokens")), prompt)
        written = min(_int(usage.get("cache_write_tokens")), prompt - cached)
        completion = _int(usage.get("completion_tokens"))
        # replace(): every other figure, the last-call ones included, stays the parent's own.
        return replace(
            self,
            calls=self.calls + _int(usage.get("calls")),
            prompt_tokens=self.prompt_tokens + prompt,
            cached_tokens=self.cached_tokens + cached,
            completion_tokens=self.completion_tokens + completion,
            cache_write_tokens=self.cache_write_tokens + written,
            reasoning_tokens=self.reasoning_tokens + _int(usage.get("reasoning_tokens")),
            models=self._on_model(_name(data.get("model")), ModelTokens(prompt, cached, completion, written)),
        )

    def _on_model(self, model: str, tokens: ModelTokens) -> tuple[tuple[str, ModelTokens], ...]:
        if not model:
            return self.models
        named = dict(self.models)
        named[model] = named.get(model, ModelTokens()).plus(tokens)
        return tuple(named.items())

    def _totals(self) -> ModelTokens:
        return ModelTokens(self.prompt_tokens, self.cached_tokens, self.completion_tokens, self.cache_write_tokens)

    def _by_model(self) -> list[tuple[str, ModelTokens]]:
        """Every call's figures by model; "" holds the calls recorded without one."""
        unnamed = self._totals()
        for _, tokens in self.models:
            unnamed = unnamed.minus(tokens)
        return [("", unnamed), *self.models]

    def cost(
        self, price: ModelPrice | None, prices: Mapping[str, ModelPrice] | None = None
    ) -> float | None:
        """The estimated cost in US dollars. Without ``prices`` every call is priced at ``price``; with them,
        a call on a named model at that model's price (none: left out, see ``unpriced_models``) and a call
        recorded without a model at ``price``. None when no call could be priced."""
        if not self.calls:
            return None
        if prices is None:
            return None if price is None else self._totals().cost(price)
        total, priced = 0.0, False
        for model, tokens in self._by_model():
            model_price = prices.get(model) if model else price
            if model_price is not None and (tokens.prompt_tokens or tokens.completion_tokens):
                total, priced = total + tokens.cost(model_price), True
        return total if priced else None

    def unpriced_models(self, prices: Mapping[str, ModelPrice]) -> list[str]:
        """The models that calls went to and that have no price in ``prices``."""
        return [model for model, _ in self.models if model not in prices]

    def to_dict(
        self, price: ModelPrice | None = None, prices: Mapping[str, ModelPrice] | None = None
    ) -> dict[str, Any]:
        data = asdict(self)
        data["hit_rate"] = round(self.hit_rate, 4)
        data["models"] = {model: asdict(tokens) for model, tokens in self.models}
        cost = self.cost(price, prices)
        if cost is not None:
            data["estimated_cost_usd"] = round(cost, 6)
            if prices is not None and self.unpriced_models(prices):
                data["unpriced_models"] = self.unpriced_models(prices)
        return data

    def describe(self, price: ModelPrice | None = None, prices: Mapping[str, ModelPrice] | None = None) -> str:
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
        cost = self.cost(price, prices)
        if cost is None:
            return line
        unpriced = self.unpriced_models(prices) if prices is not None else []
        left_out = f" (without the calls on {', '.join(unpriced)}: no price configured)" if unpriced else ""
        return line + f"; estimated cost ${cost:,.4f}{left_out}"


def _name(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def usage_of(records: Iterable[Any]) -> SessionUsage:
    """Sum the usage events among a session file's records (other records are ignored)."""
    usage = SessionUsage()
    for record in records:
        if isinstance(record, EventRecord) and record.kind == USAGE_KIND:
            usage = usage.add_report(record.data)
        elif isinstance(record, EventRecord) and record.kind == SUBAGENT_KIND:
            usage = usage.add_rollup(record.data)
    return usage
