"""A subagent's usage rolls up into the session's (session/usage.py): every figure summed, the last-call
figures (the parent's window) kept as they were."""

from __future__ import annotations

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
