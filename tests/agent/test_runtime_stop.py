"""Stopping a turn: mid-stream, mid-tool and while an approval waits; the session stays valid."""

from __future__ import annotations

import asyncio
import time

from agent_helpers import (
    assert_valid_request,
    session_events,
    session_messages,
    wait_for_file,
)
from process_helpers import unique_sleep, wait_until_gone, wait_until_running

from catbuddy.agent.events import (
    ApprovalRequested,
    AssistantMessage,
    LoopState,
    StateChanged,
    TextDelta,
    TurnEnded,
    TurnEndReason,
)
from catbuddy.agent.tool_calls import CANCELLED_RESULT
from catbuddy.testing.script import Reply

SLOW_TEXT = "This reply streams very slowly, a few characters at a time, " * 4
STOP_DEADLINE = 1.5  # seconds: "at once", with room for a loaded test machine


async def test_stop_mid_stream_keeps_the_partial_text_and_closes_the_stream(scripted_llm, make_loop):
    scripted_llm.push(Reply.text(SLOW_TEXT, chunk_size=4, delay=0.05))
    loop, events = await make_loop(scripted_llm)

    loop.submit("tell me a long story")
    await events.wait_for(TextDelta)
    started = time.monotonic()
    await loop.stop()
    took = time.monotonic() - started

    assert took < STOP_DEADLINE
    assert loop.state is LoopState.IDLE
    ended = events.of(TurnEnded)
    assert len(ended) == 1 and ended[0].reason is TurnEndReason.STOPPED
    assert LoopState.STOPPING in [e.new for e in events.of(StateChanged)]
    streamed = "".join(e.text for e in events.of(TextDelta))
    assert streamed and len(streamed) < len(SLOW_TEXT)
    last = session_messages(loop)[-1]
    assert last == {"role": "assistant", "content": streamed}
    assert events.of(AssistantMessage)[-1].message == last
    # The server saw the client go away promptly, instead of streaming the rest.
    request = scripted_llm.requests[0]
    assert request.wait(STOP_DEADLINE)
    assert request.outcome == "disconnected"
    assert session_events(loop, "stop")


async def test_the_loop_takes_the_next_turn_after_a_stop(scripted_llm, make_loop):
    scripted_llm.push(Reply.text(SLOW_TEXT, chunk_size=4, delay=0.05), Reply.text("second answer"))
    loop, events = await make_loop(scripted_llm)
    loop.submit("first")
    await events.wait_for(TextDelta)
    await loop.stop()

    outcome = await loop.run_turn("second")

    assert outcome.reason is TurnEndReason.DONE and outcome.text == "second answer"
    sent = scripted_llm.requests[1].messages
    assert_valid_request(sent)
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "user"]


async def test_stop_mid_tool_kills_the_process_group_and_answers_the_call_as_cancelled(
    workspace, scripted_llm, make_loop
):
    sleep = unique_sleep()  # found in /proc also inside the sandbox's PID namespace
    scripted_llm.push(
        Reply.tool_call("exec", {"command": f"echo started > started.txt; {sleep} & {sleep}"}, id="call_sleep"),
        Reply.text("ok"),
    )
    loop, events = await make_loop(scripted_llm, approval="yolo")

    loop.submit("sleep")
    await wait_for_file(workspace.work_root / "started.txt")
    assert wait_until_running(sleep, count=2)
    started = time.monotonic()
    await loop.stop()
    took = time.monotonic() - started

    assert took < STOP_DEADLINE
    assert wait_until_gone(sleep, timeout=0.5) == []
    assert events.of(TurnEnded)[-1].reason is TurnEndReason.STOPPED
    messages = session_messages(loop)
    assert messages[-1] == {"role": "tool", "tool_call_id": "call_sleep", "content": CANCELLED_RESULT}

    await loop.run_turn("never mind")
    assert_valid_request(scripted_llm.requests[-1].messages)
    assert scripted_llm.requests[-1].messages[-2]["content"] == CANCELLED_RESULT


async def test_stop_while_an_approval_waits_answers_every_call_as_cancelled(scripted_llm, make_loop):
    scripted_llm.push(
        Reply.tool_calls(("exec", {"command": "echo a > a.txt"}), ("exec", {"command": "echo b > b.txt"})),  # writes: they ask
        Reply.text("ok"),
    )
    loop, events = await make_loop(scripted_llm, approval="ask")

    loop.submit("run two commands")
    await events.wait_for(ApprovalRequested)
    await asyncio.wait_for(loop.stop(), STOP_DEADLINE)

    messages = session_messages(loop)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert all(m["content"] == CANCELLED_RESULT for m in messages[2:])
    assert loop.state is LoopState.IDLE
    await loop.run_turn("forget it")
    assert_valid_request(scripted_llm.requests[-1].messages)


async def test_stop_when_idle_does_nothing(scripted_llm, make_loop):
    loop, events = await make_loop(scripted_llm)

    await loop.stop()

    assert loop.state is LoopState.IDLE and not events.of(TurnEnded)
