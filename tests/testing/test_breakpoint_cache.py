"""The scripted server's Anthropic-style cache: only breakpoints cache; reads and writes are reported."""

from __future__ import annotations

from typing import Any

from catbuddy.testing.breakpoint_cache import BreakpointCache

SYSTEM = {"role": "system", "content": "x " * 3000}  # 1,500 "tokens": over the 1,024 minimum


def count(text: str) -> int:
    return len(text) // 4


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "messages": list(messages)}


def marked(message: dict[str, Any]) -> dict[str, Any]:
    return {
        **message,
        "content": [{"type": "text", "text": message["content"], "cache_control": {"type": "ephemeral"}}],
    }


def test_without_breakpoints_nothing_is_read_or_written() -> None:
    cache = BreakpointCache()
    request = body(SYSTEM, {"role": "user", "content": "hi"})
    assert cache.served(request, 1000, count) == (0, 0)
    assert cache.served(request, 1000, count) == (0, 0)


def test_a_breakpoint_writes_once_then_reads() -> None:
    cache = BreakpointCache()
    request = body(marked(SYSTEM), {"role": "user", "content": "hi"})
    read, written = cache.served(request, 1600, count)
    assert read == 0 and written > 1024
    again = cache.served(body(marked(SYSTEM), {"role": "user", "content": "hi!"}), 1600, count)
    assert abs(again[0] - written) <= 2 and again[1] == 0  # (counts are scaled to the reported prompt)


def test_a_prefix_below_the_minimum_is_not_cached() -> None:
    cache = BreakpointCache()
    small = body(marked({"role": "system", "content": "short"}), {"role": "user", "content": "hi"})
    assert cache.served(small, 10, count) == (0, 0)
    assert cache.served(small, 10, count) == (0, 0)


def test_a_later_breakpoint_finds_an_earlier_prefix_within_the_lookback() -> None:
    cache = BreakpointCache()
    first = [marked(SYSTEM), marked({"role": "user", "content": "a " * 10})]
    cache.served(body(*first), 2000, count)
    grown = [marked(SYSTEM), {"role": "user", "content": "a " * 10}, {"role": "assistant", "content": "ok"},
             marked({"role": "user", "content": "b"})]  # fmt: skip
    read, written = cache.served(body(*grown), 2000, count)
    assert read > 0 and written > 0
