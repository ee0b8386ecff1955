"""Compaction rides the cache (docs/architecture.md §5): when the whole history fits, the summary request
is the chat's own last request continued — same model, system prompt, tool schemas and history, then
one user message with the instructions and ``tool_choice: "none"``; otherwise, or with another
compact model, the history is folded in chunks as before."""

from __future__ import annotations

from compaction_helpers import (
    COMPACT_MARK,
    WHOLE,
    Brain,
    chat_requests,
    is_live_summary_request,
    seed,
    summary_requests,
)

from catbuddy.config import ContextSettings, ModelSpec
from catbuddy.messages import content_text
from catbuddy.testing.script import Reply

SMALL = {"scripted": ModelSpec(8000, 1000)}
NEVER = ContextSettings(compact_message_threshold=10**6, compact_token_ratio=100.0)


def tool_turns():
    """A responder: every user message gets one read_file call, then a short answer."""

    def reply(body: dict) -> object:
        if body["messages"][-1]["role"] == "user":
            return Reply.tool_call("read_file", {"path": "a.py"}, id=f"c{len(body['messages'])}", chunk_size=WHOLE)
        return Reply.text("looked", chunk_size=WHOLE)

    return reply


async def test_the_summary_request_continues_the_last_request_byte_for_byte(scripted_llm_factory, make_loop, workspace):
    (workspace.work_root / "a.py").write_text("print('a')\n")
    llm = scripted_llm_factory([Brain(reply=tool_turns())] * 80)
    loop, _ = await make_loop(llm)

    turn = 0
    while not summary_requests(llm):
        await loop.run_turn(f"turn {turn}: look again")
        turn += 1
        assert turn < 30

    [summary] = summary_requests(llm)
    last = llm.requests[summary.index - 2]  # indexes are 1-based: the request just before
    assert not is_live_summary_request(last.body)
    assert is_live_summary_request(summary.body)
    assert summary.model == last.model
    assert summary.messages[: len(last.messages)] == last.messages  # system prompt and history, exactly
    assert summary.messages[0] == last.messages[0]
    assert summary.body["tools"] == last.body["tools"]
    assert summary.body["tool_choice"] == "none"
    # after the last request: its reply and what followed it, then the instructions
    assert summary.messages[len(last.messages)] == loop.session.load().messages[len(last.messages) - 1].message
    assert summary.messages[len(last.messages)]["role"] == "assistant"
    ask = summary.messages[-1]
    assert ask["role"] == "user" and COMPACT_MARK in content_text(ask["content"])
    # it says which newest messages stay verbatim, and carries the ledger code built
    assert "stay verbatim after your" in ask["content"]
    assert "## Ledger" in ask["content"] and "Files read: `a.py`" in ask["content"]
    record = loop.conversation.history.compaction_data
    assert record["mode"] == "live_prefix" and record["chunks"] == 1


async def test_a_history_too_big_for_one_request_is_folded_in_chunks(scripted_llm_factory, make_loop):
    brain = Brain()
    llm = scripted_llm_factory([brain] * 10, context_window=8000)
    loop, _ = await make_loop(llm, models=SMALL, context=NEVER)
    seed(loop, 20, words=400)  # ~16k tokens against an 8k window: governance would snip it
    seed(loop, 13)

    result = await loop.compact()

    assert result.ok and brain.summary_requests >= 3
    for request in summary_requests(llm):
        assert not is_live_summary_request(request.body)
        assert COMPACT_MARK in request.messages[0]["content"]
        assert "tools" not in request.body and "tool_choice" not in request.body
    assert loop.conversation.history.compaction_data["mode"] == "chunked"
    assert not llm.over_budget


async def test_another_compact_model_folds_in_chunks(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 5)
    loop, _ = await make_loop(llm, compact_model="summarizer", models={"summarizer": ModelSpec(32000, 2000)})
    seed(loop, 26)

    await loop.run_turn("go")

    [summary] = summary_requests(llm)
    assert summary.model == "summarizer" and not is_live_summary_request(summary.body)
    assert "tool_choice" not in summary.body
    assert loop.conversation.history.compaction_data["mode"] == "chunked"


async def test_the_compact_model_set_to_the_chat_model_still_rides_the_cache(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 5)
    loop, _ = await make_loop(llm, compact_model="scripted")
    seed(loop, 26)

    await loop.run_turn("go")

    [summary] = summary_requests(llm)
    assert is_live_summary_request(summary.body) and summary.body["tool_choice"] == "none"


async def test_a_live_request_the_provider_refuses_as_too_long_is_folded_in_chunks(scripted_llm_factory, make_loop):
    brain = Brain(summaries=[Reply.context_length_exceeded()])
    llm = scripted_llm_factory([brain] * 10)
    loop, _ = await make_loop(llm, context=NEVER)
    seed(loop, 26)

    result = await loop.compact()

    assert result.ok
    live, chunked = summary_requests(llm)
    assert is_live_summary_request(live.body) and not is_live_summary_request(chunked.body)
    assert loop.conversation.history.compaction_data["mode"] == "chunked"


async def test_manual_compaction_on_an_idle_session_continues_the_last_request(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 30)
    loop, _ = await make_loop(llm, context=NEVER)
    for turn in range(14):
        await loop.run_turn(f"question {turn}")

    result = await loop.compact("keep the numbers")

    assert result.ok
    [summary] = summary_requests(llm)
    last = chat_requests(llm)[-1]
    assert summary.messages[: len(last.messages)] == last.messages
    assert summary.messages[len(last.messages)]["role"] == "assistant"  # the last reply, then the ask
    assert "keep the numbers" in summary.messages[-1]["content"]
