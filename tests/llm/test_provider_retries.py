"""Retries: what is retried, how long we wait, and what happens when retries run out."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from provider_helpers import USER, collect

from catbuddy.llm.errors import ContextLengthExceeded, ProviderError, RateLimited
from catbuddy.llm.provider import Provider, TextChunk
from catbuddy.testing.script import Reply
from catbuddy.testing.scripted_llm import ScriptedLLM

Retries = list[tuple[int, float, str]]


def recorder() -> tuple[Retries, Callable[[int, float, str], None]]:
    calls: Retries = []
    return calls, lambda attempt, delay, reason: calls.append((attempt, delay, reason))


async def test_429_with_retry_after_is_retried_after_the_asked_delay(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.error(429, retry_after=0.2), Reply.text("made it"))
    retries, on_retry = recorder()
    started = time.perf_counter()
    _, response = await collect(
        make_provider(scripted_llm, max_retries=2).stream_chat(
            model="scripted", messages=USER, on_retry=on_retry
        )
    )
    assert response.text == "made it"
    assert retries == [(1, 0.2, "rate limited (429)")]
    assert time.perf_counter() - started >= 0.2
    assert [r.outcome for r in scripted_llm.requests] == ["error 429 rate_limit_exceeded", "streamed"]


async def test_a_long_retry_after_is_capped(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(Reply.error(429, retry_after=120), Reply.text("ok"))
    provider = Provider(scripted_llm.settings(max_retries=1), retry_after_cap=0.05)
    retries, on_retry = recorder()
    try:
        await collect(provider.stream_chat(model="scripted", messages=USER, on_retry=on_retry))
    finally:
        await provider.aclose()
    assert retries[0][1] == 0.05


async def test_a_server_error_is_retried_with_backoff_and_an_async_callback(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.error(500), Reply.error(503), Reply.text("back"))
    seen: Retries = []

    async def on_retry(attempt: int, delay: float, reason: str) -> None:
        seen.append((attempt, delay, reason))

    provider = make_provider(scripted_llm, max_retries=3)
    _, response = await collect(provider.stream_chat(model="scripted", messages=USER, on_retry=on_retry))
    assert response.text == "back"
    assert [(a, r) for a, _, r in seen] == [(1, "server error (500)"), (2, "server error (503)")]
    # exponential: 0.01 then 0.02, each within ±25% jitter
    assert 0.0075 <= seen[0][1] <= 0.0125 and 0.015 <= seen[1][1] <= 0.025


def test_backoff_doubles_up_to_the_cap() -> None:
    from catbuddy.config import Settings

    provider = Provider(Settings(api_key="k"), backoff_base=1.0, backoff_cap=30.0)
    delays = [provider.retry_delay(n) for n in range(1, 8)]
    for n, delay in enumerate(delays[:5], start=1):
        assert 0.75 * 2 ** (n - 1) <= delay <= 1.25 * 2 ** (n - 1)
    assert all(d <= 30.0 * 1.25 for d in delays) and delays[-1] >= 30.0 * 0.75


async def test_rate_limit_retries_run_out_into_rate_limited(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(*[Reply.error(429, "busy", retry_after=0) for _ in range(3)])
    retries, on_retry = recorder()
    provider = make_provider(scripted_llm, max_retries=2)
    with pytest.raises(RateLimited) as error:
        await collect(provider.stream_chat(model="scripted", messages=USER, on_retry=on_retry))
    assert len(scripted_llm.requests) == 3 and len(retries) == 2
    assert "busy" in error.value.message and error.value.hint


async def test_server_error_retries_run_out_into_provider_error(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.error(500, "kaput"), Reply.error(500, "kaput"))
    retries, on_retry = recorder()
    with pytest.raises(ProviderError, match=r"server error \(500\): kaput"):
        await make_provider(scripted_llm, max_retries=1).complete(
            model="scripted", messages=USER, on_retry=on_retry
        )
    assert len(scripted_llm.requests) == 2 and [r[0] for r in retries] == [1]


async def test_context_length_exceeded_is_not_retried(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.context_length_exceeded("This model's maximum context length is 10 tokens."))
    retries, on_retry = recorder()
    with pytest.raises(ContextLengthExceeded, match="maximum context length is 10 tokens"):
        await collect(
            make_provider(scripted_llm, max_retries=3).stream_chat(
                model="scripted", messages=USER, on_retry=on_retry
            )
        )
    assert retries == [] and len(scripted_llm.requests) == 1


async def test_the_servers_own_window_check_maps_to_context_length_exceeded(
    scripted_llm_factory: Callable[..., ScriptedLLM], make_provider: Callable[..., Provider]
) -> None:
    llm = scripted_llm_factory([Reply.text("unused")], context_window=50)
    with pytest.raises(ContextLengthExceeded):
        await collect(make_provider(llm, max_retries=3).stream_chat(model="scripted", messages=USER * 20))
    assert len(llm.over_budget) == 1 and llm.remaining == 1


async def test_an_exhausted_quota_is_not_retried(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.error(429, "You exceeded your current quota", code="insufficient_quota"))
    with pytest.raises(RateLimited, match="quota"):
        await collect(make_provider(scripted_llm, max_retries=3).stream_chat(model="scripted", messages=USER))
    assert len(scripted_llm.requests) == 1


async def test_a_stream_broken_after_text_arrived_is_not_retried(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(
        Reply.text("partial reply text", chunk_size=3, disconnect_after=3), Reply.text("unused")
    )
    texts: list[str] = []
    with pytest.raises(ProviderError, match="broke while the reply was streaming"):
        async for event in make_provider(scripted_llm, max_retries=3).stream_chat(
            model="scripted", messages=USER
        ):
            if isinstance(event, TextChunk):
                texts.append(event.text)
    assert texts == ["par", "tia"]
    assert len(scripted_llm.requests) == 1


async def test_a_stream_broken_before_any_output_is_retried(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.text("lost", disconnect_after=1), Reply.text("second try"))
    retries, on_retry = recorder()
    provider = make_provider(scripted_llm, max_retries=1)
    _, response = await collect(provider.stream_chat(model="scripted", messages=USER, on_retry=on_retry))
    assert response.text == "second try"
    assert retries[0][2] == "connection failed"


async def test_a_stalled_stream_times_out_and_is_retried(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.text("slow", delay=10.0), Reply.text("quick"))
    retries, on_retry = recorder()
    provider = make_provider(scripted_llm, max_retries=3, stream_idle_timeout=0.2)
    _, response = await collect(provider.stream_chat(model="scripted", messages=USER, on_retry=on_retry))
    assert response.text == "quick"
    assert retries[0][2] == "no data for 0.2 s"
    assert scripted_llm.requests[0].outcome != "streamed"  # did not wait the stalled stream's 10 s


async def test_an_answer_past_request_timeout_ends_the_call_without_a_retry(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.text("slow", delay=10.0), Reply.text("unused"))
    retries, on_retry = recorder()
    # 1 s, not less: on a loaded machine connecting alone can take a few hundred milliseconds.
    provider = make_provider(scripted_llm, max_retries=3, request_timeout=1.0)
    with pytest.raises(ProviderError, match=r"did not finish the reply within 1 s \(request_timeout\)"):
        await provider.complete(model="scripted", messages=USER, on_retry=on_retry)
    assert retries == [] and len(scripted_llm.requests) == 1
