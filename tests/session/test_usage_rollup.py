"""A subagent's usage rolls up into the session's (session/usage.py): every figure summed, the last-call
figures (the parent's window) kept as they were, and each model's calls priced at that model's price."""

from __future__ import annotations

import pytest

from catbuddy.config import ModelPrice
from catbuddy.session.usage import SessionUsage


def test_a_rollup_adds_the_childs_figures_and_keeps_the_parents_last_call() -> None:
    parent = SessionUsage().add(1000, 800, 50, cache_write_tokens=100, reasoning_tokens=10)
    child = {"calls": 3, "prompt_tokens": 6000, "cached_tokens": 4000, "completion_tokens": 300,
             "cache_write_tokens": 500, "reasoning_tokens": 40}  # fmt: skip

    total = parent.add_rollup({"usage": child})

    assert (total.calls, total.prompt_tokens, total.cached_tokens, total.completion_tokens) == (
        4,
        7000,
        4800,
        350,
    )
    assert (total.cache_write_tokens, total.reasoning_tokens) == (600, 50)
    assert (total.last_prompt_tokens, total.last_cached_tokens) == (1000, 800)
    assert parent.add_rollup({"usage": {}}) == parent and parent.add_rollup({}) == parent


CHEAP = ModelPrice(input=0.1, output=0.4)
DEAR = ModelPrice(input=3.0, output=15.0)


def test_a_child_on_another_model_is_priced_at_that_models_price() -> None:
    parent = SessionUsage().add(1_000_000, 0, 100_000, model="dear-model")
    total = parent.add_rollup(
        {"model": "cheap-model", "usage": {"calls": 2, "prompt_tokens": 2_000_000, "completion_tokens": 0}}
    )

    cost = total.cost(DEAR, {"dear-model": DEAR, "cheap-model": CHEAP})

    assert cost == pytest.approx(3.0 + 1.5 + 2 * 0.1)
    assert dict(total.models)["cheap-model"].prompt_tokens == 2_000_000


def test_calls_on_a_model_without_a_price_are_left_out_and_named() -> None:
    usage = SessionUsage().add(1_000_000, 0, 0, model="dear-model").add(500_000, 0, 0, model="local-llama")

    assert usage.cost(DEAR, {"dear-model": DEAR}) == pytest.approx(3.0)
    assert usage.unpriced_models({"dear-model": DEAR}) == ["local-llama"]
    assert "(without the calls on local-llama: no price configured)" in usage.describe(DEAR, {"dear-model": DEAR})


def test_a_call_recorded_without_a_model_is_priced_at_the_sessions_model() -> None:
    # Sessions written before usage records named their model.
    usage = SessionUsage().add_report({"prompt_tokens": 1_000_000, "completion_tokens": 0})

    assert usage.models == ()
    assert usage.cost(DEAR, {}) == pytest.approx(3.0)
    assert usage.cost(None, {}) is None
