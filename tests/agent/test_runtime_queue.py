"""Input sent while a turn runs waits its turn, in order; a stop drops it."""

from __future__ import annotations

from catbuddy.agent.events import TextDelta, TurnEnded, TurnEndReason, TurnStarted
from catbuddy.messages import strip_runtime_block
from catbuddy.testing.script import Reply


def last_user(request) -> str:
    users = [m for m in request.messages if m["role"] == "user"]
    return strip_runtime_block(users[-1]["content"])


async def test_input_submitted_during_a_turn_runs_after_it_in_order(scripted_llm, make_loop):
    scripted_llm.push(
        Reply.text("one " * 10, chunk_size=4, delay=0.02), Reply.text("two"), Reply.text("three")
    )
    loop, events = await make_loop(scripted_llm)

    loop.submit("first")
    await events.wait_for(TextDelta)
    loop.submit("second")
    loop.submit("third")
    assert loop.queued == ["second", "third"]
    ended = await events.turn_end(3)

    assert [e.reason for e in ended] == [TurnEndReason.DONE] * 3
    assert [e.text for e in ended] == ["one " * 10, "two", "three"]
    assert [e.user_text for e in events.of(TurnStarted)] == ["first", "second", "third"]
    assert [last_user(r) for r in scripted_llm.requests] == ["first", "second", "third"]
    assert loop.queued == []


async def test_stop_drops_the_queued_input(scripted_llm, make_loop):
    scripted_llm.push(Reply.text("slow " * 40, chunk_size=4, delay=0.05))
    loop, events = await make_loop(scripted_llm)

    loop.submit("first")
    await events.wait_for(TextDelta)
    loop.submit("queued")
    await loop.stop()

    assert loop.queued == []
    assert len(events.of(TurnEnded)) == 1 and len(scripted_llm.requests) == 1


async def test_blank_input_is_ignored(scripted_llm, make_loop):
    loop, events = await make_loop(scripted_llm)

    loop.submit("   \n")

    assert not events.of(TurnStarted) and loop.queued == []
