"""Cache writes and reasoning tokens in a session's usage, and what they cost."""

from __future__ import annotations

from catbuddy.config import ModelPrice
from catbuddy.session.usage import SessionUsage

# Claude Sonnet 4's list prices (US$ per million): input 3, cache write 3.75 (1.25×), cache read 0.30, output 15.
SONNET = ModelPrice(input=3.0, output=15.0, cached_input=0.30, cache_write=3.75)


def test_writes_and_reads_are_summed_from_usage_reports() -> None:
    usage = SessionUsage().add_report(
        {"prompt_tokens": 3329, "cached_tokens": 0, "cache_write_tokens": 3211, "completion_tokens": 100}
    )
    usage = usage.add_report(
        {"prompt_tokens": 3329, "cached_tokens": 3211, "completion_tokens": 53, "reasoning_tokens": 7}
    )
    assert (usage.cache_write_tokens, usage.cached_tokens, usage.reasoning_tokens) == (3211, 3211, 7)
    line = usage.describe(SONNET)
    assert "3,211 written to the cache" in line and "(7 reasoning)" in line


def test_the_cost_prices_writes_reads_and_fresh_input_apart() -> None:
    usage = SessionUsage().add(
        1_000_000, cached_tokens=500_000, completion_tokens=0, cache_write_tokens=250_000
    )
    assert usage.cost(SONNET) == 250_000 * 3.0 / 1e6 + 500_000 * 0.30 / 1e6 + 250_000 * 3.75 / 1e6


def test_without_a_cache_write_price_writes_cost_the_input_price() -> None:
    price = ModelPrice(input=3.0, output=15.0)
    usage = SessionUsage().add(1000, cached_tokens=0, completion_tokens=0, cache_write_tokens=1000)
    assert usage.cost(price) == 1000 * 3.0 / 1e6
