"""Cancelling a call, or closing its stream, closes the HTTP connection at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import aclosing

from provider_helpers import USER

from catbuddy.llm.provider import Provider, TextChunk
from catbuddy.testing.script import Reply
from catbuddy.testing.scripted_llm import ScriptedLLM

SLOW = Reply.text("x" * 200, chunk_size=1, delay=0.05)


async def test_cancelling_the_task_mid_stream_returns_promptly_and_drops_the_connection(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(SLOW)
    provider = make_provider(scripted_llm)
    first_text = asyncio.Event()
    received: list[str] = []

    async def consume() -> None:
        async for event in provider.stream_chat(model="scripted", messages=USER):
            if isinstance(event, TextChunk):
                received.append(event.text)
                first_text.set()

    task = asyncio.create_task(consume())
    waiter = asyncio.create_task(first_text.wait())
    # generous: the first call in a test run also loads the SDK and the tokenizer
    done, _ = await asyncio.wait({task, waiter}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    assert waiter in done, f"no text arrived before the stream ended: {task}"
    started = time.perf_counter()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert time.perf_counter() - started < 2.0  # the stream had ~10 s left to run
    assert task.cancelled()
    record = scripted_llm.requests[0]
    assert await asyncio.to_thread(record.wait, 2.0)
    assert record.outcome == "disconnected"
    assert len(received) < 20


async def test_closing_the_generator_closes_the_stream(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(SLOW)
    provider = make_provider(scripted_llm)
    async with aclosing(provider.stream_chat(model="scripted", messages=USER)) as stream:
        async for event in stream:
            if isinstance(event, TextChunk):
                break
    record = scripted_llm.requests[0]
    assert await asyncio.to_thread(record.wait, 2.0)
    assert record.outcome == "disconnected"


async def test_a_cancelled_complete_returns_promptly_and_the_provider_still_works(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(SLOW, Reply.text("fresh"))
    provider = make_provider(scripted_llm)
    task = asyncio.create_task(provider.complete(model="scripted", messages=USER))
    for _ in range(500):  # wait until the server is "generating" the slow reply
        if scripted_llm.requests and scripted_llm.requests[0].reply_no is not None:
            break
        await asyncio.sleep(0.01)
    started = time.perf_counter()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert time.perf_counter() - started < 2.0 and task.cancelled()  # ~10 s of stream left
    response = await provider.complete(model="scripted", messages=USER)
    assert response.text == "fresh"
