"""Provider trouble during a turn: retries shown as events, errors with hints, and a loop that goes on."""

from __future__ import annotations

import socket

from agent_helpers import assert_valid_request, session_events, session_messages

from catbuddy.agent.events import (
    ErrorOccurred,
    LoopState,
    Retrying,
    TextDelta,
    TurnEnded,
    TurnEndReason,
)
from catbuddy.agent.loop import AgentLoop
from catbuddy.agent.runner import CUT_OFF_MARK
from catbuddy.config import Settings
from catbuddy.testing.script import Reply


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_429_with_retry_after_is_retried_then_answered(scripted_llm, make_loop):
    scripted_llm.push(Reply.error(429, "slow down", retry_after=0.02), Reply.text("answer"))
    loop, events = await make_loop(scripted_llm, max_retries=2)

    outcome = await loop.run_turn("hi")

    assert outcome.reason is TurnEndReason.DONE and outcome.text == "answer"
    (retry,) = events.of(Retrying)
    assert retry.attempt == 1 and retry.delay <= 0.05
    assert "429" in retry.reason or "rate" in retry.reason.lower()
    assert not events.of(ErrorOccurred)
    assert [r.outcome for r in scripted_llm.requests][0].startswith("error 429")


async def test_a_500_is_retried_then_answered(scripted_llm, make_loop):
    scripted_llm.push(Reply.error(500, "boom"), Reply.text("fine now"))
    loop, events = await make_loop(scripted_llm, max_retries=2)

    outcome = await loop.run_turn("hi")

    assert outcome.text == "fine now"
    assert len(events.of(Retrying)) == 1
    # A retry repeats the same request: nothing was persisted in between.
    first, second = scripted_llm.requests
    assert first.messages == second.messages
    assert [m["role"] for m in session_messages(loop)] == ["user", "assistant"]


async def test_an_unreachable_endpoint_ends_the_turn_with_an_error_and_a_hint(workspace):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    settings = Settings(model="scripted", base_url=url, api_key="test", approval="yolo", max_retries=0)
    loop = AgentLoop(workspace, settings, channel="headless")
    events: list = []
    loop.add_listener(events.append)
    await loop.start()
    try:
        outcome = await loop.run_turn("hello?")
        again = await loop.run_turn("anyone?")
    finally:
        await loop.aclose()

    assert outcome.reason is TurnEndReason.ERROR and again.reason is TurnEndReason.ERROR
    errors = [e for e in events if isinstance(e, ErrorOccurred)]
    assert len(errors) == 2
    assert "127.0.0.1" in errors[0].message and errors[0].hint
    assert [e.reason for e in events if isinstance(e, TurnEnded)] == [TurnEndReason.ERROR] * 2
    assert loop.state is LoopState.IDLE


async def test_a_rejected_key_reports_a_hint_and_the_loop_stays_usable(scripted_llm, make_loop):
    scripted_llm.push(Reply.error(401, "Incorrect API key provided"), Reply.text("welcome back"))
    loop, events = await make_loop(scripted_llm)

    failed = await loop.run_turn("hi")
    recovered = await loop.run_turn("hi again")

    assert failed.reason is TurnEndReason.ERROR
    (error,) = events.of(ErrorOccurred)
    assert "OPENAI_API_KEY" in error.message + error.hint
    assert "test-key" not in error.message + error.hint
    assert recovered.reason is TurnEndReason.DONE and recovered.text == "welcome back"
    assert_valid_request(scripted_llm.requests[-1].messages)
    assert session_events(loop, "error")


async def test_a_stream_that_breaks_midway_ends_the_turn_with_an_error_and_keeps_the_text_shown(
    scripted_llm, make_loop
):
    scripted_llm.push(Reply.text("partial answer that never ends", chunk_size=4, disconnect_after=3))
    loop, events = await make_loop(scripted_llm, max_retries=2)

    outcome = await loop.run_turn("hi")

    assert outcome.reason is TurnEndReason.ERROR
    assert events.of(TextDelta) and events.of(ErrorOccurred)
    assert not events.of(Retrying)  # text reached the user: a retry would repeat it
    assert len(scripted_llm.requests) == 1
    shown = "".join(e.text for e in events.of(TextDelta))
    # kept, and marked as cut off for the model's next look at it
    assert session_messages(loop)[-1] == {"role": "assistant", "content": shown + CUT_OFF_MARK}
    scripted_llm.push(Reply.text("again"))
    await loop.run_turn("try again")
    assert_valid_request(scripted_llm.requests[-1].messages)


async def test_a_context_length_error_is_recovered_with_one_retry(scripted_llm, make_loop):
    scripted_llm.push(Reply.context_length_exceeded(), Reply.text("fits now"))
    loop, events = await make_loop(scripted_llm)

    outcome = await loop.run_turn("hi")

    assert outcome.reason is TurnEndReason.DONE and outcome.text == "fits now"
    assert len(scripted_llm.requests) == 2
    assert session_events(loop, "context_length_exceeded")
