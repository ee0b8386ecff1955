"""Auto and manual compaction through the scripted server (docs/architecture.md §5): triggers, what is kept, the
rolling summary, pinning, chunking, resume, the compact model, and the states the front ends see."""

from __future__ import annotations

import pytest
from agent_helpers import assert_valid_request, session_messages
from compaction_helpers import (
    WHOLE,
    Brain,
    chat_requests,
    is_summary_request,
    seed,
    seed_tool_turn,
    summary_requests,
    summary_text,
)

from catbuddy.agent.events import CompactionFinished, LoopState, StateChanged, TurnEndReason
from catbuddy.agent.loop import AgentLoop
from catbuddy.config import ContextSettings, ModelSpec
from catbuddy.session.history import SUMMARY_PREFIX
from catbuddy.session.records import CompactionRecord, read_session_file
from catbuddy.testing.script import Reply

SMALL = {"scripted": ModelSpec(8000, 1000)}
NEVER = ContextSettings(compact_message_threshold=10**6, compact_token_ratio=100.0)


def pinned(request: object) -> str:
    messages = request.messages  # type: ignore[attr-defined]
    assert messages[1]["role"] == "user" and messages[1]["content"].startswith(SUMMARY_PREFIX)
    return str(messages[1]["content"])


def prose(request: object) -> str:
    """The model's part of the pinned summary (before what code carries: the user's words, the ledger)."""
    text = pinned(request)[len(SUMMARY_PREFIX) :]
    for heading in ("\n\n## The user's own words", "\n\n## Ledger", "\n\nEverything folded"):
        text = text.split(heading)[0]
    return text


# --- triggers --------------------------------------------------------------------------------------


async def test_compaction_runs_before_the_call_that_would_carry_message_51(scripted_llm_factory, make_loop):
    brain = Brain()
    llm = scripted_llm_factory([brain] * 40)
    loop, _ = await make_loop(llm)

    for turn in range(26):
        assert (await loop.run_turn(f"turn {turn}")).reason is TurnEndReason.DONE

    kinds = ["summary" if is_summary_request(r.body) else "chat" for r in llm.requests]
    # turns 1–25 leave 50 messages; turn 26's user message is the 51st
    assert kinds == ["chat"] * 25 + ["summary", "chat"]
    after = llm.requests[-1]
    assert prose(after) == summary_text(1)
    assert len(after.messages) == 2 + 25  # system, summary, the 25 newest messages (a user one first)
    assert len(loop.conversation.history.entries) == 26  # plus the reply


async def test_compaction_runs_when_history_tokens_pass_80_percent_of_the_budget(
    scripted_llm_factory, make_loop
):
    brain = Brain()
    # 8,400: the fixed part (tool schemas with update_plan and task) must leave room for more than the
    # 25 kept messages below the threshold, or there would be nothing to fold when it is crossed.
    llm = scripted_llm_factory([brain] * 60, context_window=8400)
    loop, events = await make_loop(llm, models={"scripted": ModelSpec(8400, 1000)})
    threshold = loop.turn_context().compact_threshold
    assert threshold == int(0.8 * (8400 - 1000 - 1024))
    seen_at_compact: list[int] = []
    events.on = lambda e: (
        seen_at_compact.append(loop.compaction().measure().tokens)
        if isinstance(e, StateChanged) and e.new is LoopState.COMPACT
        else None
    )

    turn = 0
    while not summary_requests(llm):
        await loop.run_turn(f"turn {turn}: " + "please refactor the parser " * 25)
        turn += 1
        assert turn < 20, "no compaction although the history kept growing"

    assert len(session_messages(loop)) < 50  # the message trigger did not fire
    assert seen_at_compact[0] > threshold
    first_summary = llm.requests.index(summary_requests(llm)[0])
    for request in llm.requests[:first_summary]:
        assert loop.turn_context().counter.count_request(request.messages, request.tools) <= threshold + 50
    assert not llm.over_budget


# --- what is kept ------------------------------------------------------------------------------------


async def test_the_kept_tail_is_verbatim_starts_on_a_user_message_and_keeps_calls_with_results(
    scripted_llm_factory, make_loop
):
    llm = scripted_llm_factory([Brain()] * 5)
    loop, _ = await make_loop(llm)
    seed(loop, 12)  # 24 messages
    for tag in ("t1", "t2", "t3", "t4", "t5"):
        seed_tool_turn(loop, tag)  # 5 messages each: the 25-from-the-end boundary falls inside one
    seed(loop, 1, tag="late")

    await loop.run_turn("and now?")

    chat = chat_requests(llm)[-1]
    sent = chat.messages[2:]
    on_disk = session_messages(loop)[:-1]  # without the reply to this request
    assert sent == on_disk[-len(sent) :]  # byte for byte the newest messages, nothing rewritten
    assert sent[0]["role"] == "user" and len(sent) >= 25
    assert_valid_request(chat.messages)
    record = next(r for r in read_session_file(loop.session.path).records if isinstance(r, CompactionRecord))
    folded_count = len(on_disk) - len(sent)
    assert record.folded_through == loop.session.load().messages[folded_count - 1].id


async def test_the_second_summary_request_folds_the_first_summary(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 10)
    loop, _ = await make_loop(llm)
    seed(loop, 26, tag="a")
    await loop.run_turn("first")
    seed(loop, 26, tag="b")
    await loop.run_turn("second")

    first, second = summary_requests(llm)
    # on the live prefix: the first request carries the raw history, the second the first summary
    assert "a0:" in first.messages[1]["content"] and summary_text(1) not in str(first.messages)
    assert prose(second) == summary_text(1)
    assert all("a0:" not in m["content"] for m in second.messages[2:] if isinstance(m.get("content"), str))
    assert prose(chat_requests(llm)[-1]) == summary_text(2)
    # the raw lines stay: every message is still in the file
    assert len(session_messages(loop)) == 2 * 26 * 2 + 4
    assert len([r for r in loop.session.load().records if isinstance(r, CompactionRecord)]) == 2


async def test_the_pinned_summary_survives_snip(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 5, context_window=8000)
    loop, _ = await make_loop(llm, models=SMALL, context=NEVER)
    seed(loop, 26)
    assert (await loop.compact()).ok
    seed(loop, 30, words=120, tag="big")  # far more than the budget: snip must drop from the front

    await loop.run_turn("go on")

    request = chat_requests(llm)[-1]
    assert prose(request) == summary_text(1)
    assert "big0:" not in str(request.messages)  # snipped
    assert request.messages[-1]["content"].startswith("go on")
    assert not llm.over_budget


async def test_a_folded_part_larger_than_the_window_is_folded_in_chunks(scripted_llm_factory, make_loop):
    brain = Brain()
    llm = scripted_llm_factory([brain] * 10, context_window=8000)
    loop, _ = await make_loop(llm, models=SMALL, context=NEVER)
    seed(loop, 20, words=400)  # ~16k tokens of history against an 8k window
    seed(loop, 13)

    result = await loop.compact()

    assert result.ok and brain.summary_requests >= 3
    assert not llm.over_budget
    limit = 8000 - 1000 - 1024
    for request in summary_requests(llm):
        assert loop.turn_context().counter.count_request(request.messages) <= limit
    assert "summary number 1" in summary_requests(llm)[1].messages[1]["content"]
    summary = loop.conversation.history.summary
    assert summary is not None and summary.startswith(summary_text(brain.summary_requests) + "\n")


# --- resume ------------------------------------------------------------------------------------------


async def test_resuming_a_compacted_session_rebuilds_the_same_working_history(
    scripted_llm_factory, make_loop, workspace
):
    llm = scripted_llm_factory([Brain()] * 10)
    loop, _ = await make_loop(llm)
    seed(loop, 20)
    seed_tool_turn(loop, "tools")
    seed(loop, 8)
    await loop.run_turn("compact me")
    assert summary_requests(llm)
    before = (loop.conversation.history.summary, [(e.id, e.message) for e in loop.conversation.history.entries])
    session_id = loop.session_id
    await loop.aclose()

    resumed, _ = await make_loop(llm, resume=session_id)

    assert (resumed.conversation.history.summary, [(e.id, e.message) for e in resumed.conversation.history.entries]) == before
    await resumed.run_turn("after resume")
    request = chat_requests(llm)[-1]
    assert pinned(request) == SUMMARY_PREFIX + str(before[0])
    assert request.messages[2 : 2 + len(before[1])] == [m for _, m in before[1]]


# --- manual compaction, the compact model, states ----------------------------------------------------


async def test_manual_instructions_reach_the_summary_prompt_and_the_record(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 5)
    loop, events = await make_loop(llm, context=NEVER)
    seed(loop, 20)

    result = await loop.compact("keep the API design decisions")

    assert result.ok and events.of(CompactionFinished)[-1].ok
    [request] = summary_requests(llm)
    assert "keep the API design decisions" in request.messages[-1]["content"]
    assert request.body["tool_choice"] == "none"
    [record] = [r for r in loop.session.load().records if isinstance(r, CompactionRecord)]
    assert record.extra["instructions"] == "keep the API design decisions"
    assert record.extra["prose"] == summary_text(1)
    assert record.summary.startswith(summary_text(1) + "\n")
    states = [(e.old, e.new) for e in events.of(StateChanged)]
    assert states == [(LoopState.IDLE, LoopState.COMPACT), (LoopState.COMPACT, LoopState.IDLE)]


async def test_manual_compaction_with_a_short_history_says_so(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([])
    loop, _ = await make_loop(llm)
    seed(loop, 5)
    result = await loop.compact()
    assert not result.ok and "Nothing to compact" in result.message
    assert not llm.requests


async def test_the_compact_model_writes_the_summary_when_set(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 5)
    loop, _ = await make_loop(llm, compact_model="summarizer", models={"summarizer": ModelSpec(32000, 2000)})
    seed(loop, 26)
    await loop.run_turn("go")
    assert [r.model for r in llm.requests] == ["summarizer", "scripted"]


async def test_states_go_idle_run_compact_run_idle_around_an_auto_compaction(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 5)
    loop, events = await make_loop(llm)
    seed(loop, 26)
    await loop.run_turn("go")
    assert [e.new for e in events.of(StateChanged)] == [
        LoopState.RUN,
        LoopState.COMPACT,
        LoopState.RUN,
        LoopState.IDLE,
    ]
    assert events.of(CompactionFinished)[0].ok


async def test_a_compaction_mid_turn_keeps_the_tool_loop_valid(scripted_llm_factory, make_loop):
    calls = iter(range(100))

    def reply(body: dict) -> object:
        n = next(calls)
        if n < 4:
            return Reply.tool_call("list_dir", {}, id=f"live{n}")
        return Reply.text("finished", chunk_size=WHOLE)

    llm = scripted_llm_factory([Brain(reply=reply)] * 10)
    loop, _ = await make_loop(llm)
    seed(loop, 24)  # 48 messages: the turn's tool calls push it past 50

    outcome = await loop.run_turn("look around")

    assert outcome.reason is TurnEndReason.DONE and summary_requests(llm)
    for request in chat_requests(llm):
        assert_valid_request(request.messages)
    assert chat_requests(llm)[-1].messages[-1]["role"] == "tool"


# --- calibration -----------------------------------------------------------------------------------


async def test_calibration_from_reported_usage_drives_the_budget_checks(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 5, prompt_token_factor=1.5)
    loop, _ = await make_loop(llm, models=SMALL)
    raw_before = loop.compaction().measure().tokens

    await loop.run_turn("hello")

    assert loop.turn_context().calibration_factor == pytest_approx(1.5)
    assert loop.context_report().calibration == pytest_approx(1.5)
    assert loop.compaction().measure().tokens >= 1.45 * raw_before


def pytest_approx(value: float) -> object:
    import pytest

    return pytest.approx(value, rel=0.02)


def test_compaction_before_the_loop_started_says_what_to_do(workspace, settings) -> None:
    loop = AgentLoop(workspace, settings)
    with pytest.raises(RuntimeError, match="loop.start"):
        loop.compaction()
