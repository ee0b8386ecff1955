"""Helpers shared by the provider tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

from catbuddy.llm.provider import Completed, LLMResponse, ProviderEvent

FAST_BACKOFF = 0.01
USER = [{"role": "user", "content": "hello"}]


async def collect(stream: AsyncIterator[ProviderEvent]) -> tuple[list[ProviderEvent], LLMResponse]:
    events = [event async for event in stream]
    assert isinstance(events[-1], Completed), "a stream ends with Completed"
    return events[:-1], events[-1].response
