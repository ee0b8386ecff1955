"""A stream that breaks mid-reply: the text the user saw is kept, marked as cut off; the turn ends cleanly."""

from __future__ import annotations

from agent_helpers import assert_valid_request, session_messages

from catbuddy.agent.events import ErrorOccurred, TurnEndReason
from catbuddy.agent.runner import CUT_OFF_MARK
from catbuddy.testing.script import Reply


async def test_a_malformed_chunk_mid_stream_keeps_the_partial_text_marked(scripted_llm, make_loop):
    scripted_llm.push(Reply.malformed(after=3, text="Here is the first part of a long answer"), Reply.text("ok"))
    loop, events = await make_loop(scripted_llm)

    outcome = await loop.run_turn("explain")

    assert outcome.reason is TurnEndReason.ERROR
    assert events.of(ErrorOccurred)
    kept = session_messages(loop)[-1]
    assert kept["role"] == "assistant" and kept["content"].endswith(CUT_OFF_MARK)
    assert kept["content"].startswith("Here is")
    await loop.run_turn("go on")
    assert_valid_request(scripted_llm.requests[-1].messages)
    assert CUT_OFF_MARK in scripted_llm.requests[-1].messages[-2]["content"]


async def test_an_empty_answer_is_an_error_and_stores_nothing(scripted_llm, make_loop):
    scripted_llm.push(Reply.empty())
    loop, events = await make_loop(scripted_llm)

    outcome = await loop.run_turn("hello")

    assert outcome.reason is TurnEndReason.ERROR and events.of(ErrorOccurred)
    assert [m["role"] for m in session_messages(loop)] == ["user"]
