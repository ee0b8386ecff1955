"""Reasoning across a session: streamed as events, stored with its message, sent back inside the turn's
tool loop, shed at the next user turn, and still there after --resume for the turn it belongs to."""

from __future__ import annotations

from typing import Any

import pytest
from agent_helpers import session_messages

from catbuddy.agent.events import ReasoningDelta
from catbuddy.config import ModelOptions
from catbuddy.testing.scripted_llm import Reply, ScriptedLLM

DEEPSEEK_STYLE = {"scripted": ModelOptions(send_reasoning="reasoning_content")}


def assistants(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("role") == "assistant"]


async def test_reasoning_streams_as_its_own_events_and_is_stored(
    scripted_llm: ScriptedLLM, make_loop
) -> None:
    scripted_llm.push(Reply.text("Hello!", reasoning="A greeting; answer briefly."))
    loop, recorder = await make_loop(scripted_llm)
    await loop.run_turn("hi")
    assert "".join(e.text for e in recorder.of(ReasoningDelta)) == "A greeting; answer briefly."
    stored = assistants(session_messages(loop))[-1]
    assert stored["content"] == "Hello!"
    assert stored["reasoning_content"] == "A greeting; answer briefly."


async def test_the_tool_loop_gets_reasoning_back_and_the_next_turn_does_not(
    scripted_llm: ScriptedLLM, make_loop, workspace
) -> None:
    (workspace.work_root / "a.txt").write_text("alpha\n")
    scripted_llm.push(
        Reply.tool_call("read_file", {"path": "a.txt"}, reasoning="I should read a.txt first."),
        Reply.text("It says alpha.", reasoning="The file says alpha."),
        Reply.text("Bye.", reasoning="Done."),
    )
    loop, _ = await make_loop(scripted_llm, model_options=DEEPSEEK_STYLE)
    await loop.run_turn("what is in a.txt?")
    after_tool = assistants(scripted_llm.requests[1].messages)
    assert after_tool[-1]["reasoning_content"] == "I should read a.txt first."
    await loop.run_turn("thanks")
    next_turn = assistants(scripted_llm.requests[2].messages)
    assert next_turn and not any("reasoning_content" in m or "reasoning" in m for m in next_turn)
    assert assistants(session_messages(loop))[0]["reasoning_content"] == "I should read a.txt first."


async def test_a_resumed_turn_still_has_its_reasoning(
    scripted_llm: ScriptedLLM, make_loop, workspace
) -> None:
    (workspace.work_root / "a.txt").write_text("alpha\n")
    scripted_llm.push(
        Reply.tool_call("read_file", {"path": "a.txt"}, reasoning="Read it."), Reply.text("alpha")
    )
    first, _ = await make_loop(scripted_llm, model_options=DEEPSEEK_STYLE)
    await first.run_turn("read a.txt")
    session_id = first.session_id
    await first.aclose()
    resumed, _ = await make_loop(scripted_llm, model_options=DEEPSEEK_STYLE, resume=session_id)
    history = assistants(resumed.conversation.history.messages)
    assert history[0]["reasoning_content"] == "Read it."  # the last turn: a retry of it could need it


async def test_slash_model_sets_the_reasoning_effort_of_the_next_requests(
    scripted_llm: ScriptedLLM, make_loop
) -> None:
    scripted_llm.push(Reply.text("one"), Reply.text("two"))
    loop, _ = await make_loop(scripted_llm)
    loop.set_model("scripted high")
    await loop.run_turn("hi")
    loop.set_model("scripted default")
    await loop.run_turn("again")
    assert scripted_llm.requests[0]["reasoning_effort"] == "high"
    assert "reasoning_effort" not in scripted_llm.requests[1].body


async def test_an_unknown_effort_is_refused_with_the_choices(scripted_llm: ScriptedLLM, make_loop) -> None:
    loop, _ = await make_loop(scripted_llm)
    with pytest.raises(ValueError, match="one of none, minimal, low, medium, high"):
        loop.set_model("scripted turbo")
