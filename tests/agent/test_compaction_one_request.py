"""Automatic compaction makes at most one summary request before the user's turn, whatever the size."""

from __future__ import annotations

from compaction_helpers import Brain, chat_requests, seed, summary_requests

from catbuddy.agent.events import CompactionFinished, TurnEndReason
from catbuddy.config import ContextSettings, ModelSpec

SMALL = {"scripted": ModelSpec(8000, 1000)}


async def test_a_history_many_windows_long_is_folded_one_request_at_a_time(scripted_llm_factory, make_loop):
    brain = Brain()
    llm = scripted_llm_factory([brain] * 40, context_window=8000)
    loop, events = await make_loop(llm, models=SMALL, context=ContextSettings(compact_message_threshold=20))
    seed(loop, 60, words=300)  # ~40k tokens: five windows' worth, nothing folded yet
    session_id = loop.session_id
    await loop.aclose()

    resumed, events = await make_loop(llm, models=SMALL, resume=session_id,
                                      context=ContextSettings(compact_message_threshold=20))  # fmt: skip
    outcome = await resumed.run_turn("and now?")

    assert outcome.reason is TurnEndReason.DONE
    first_chat = llm.requests.index(chat_requests(llm)[0])
    assert len(summary_requests(llm)[:first_chat]) <= 1  # one summary call, then the user's turn
    assert not llm.over_budget
    [finished] = [e for e in events.of(CompactionFinished) if e.ok]
    assert 0 < finished.folded_messages < 120  # only the oldest part, cut before a user message
    assert resumed.conversation.history.entries[0].message["role"] == "user"


async def test_a_manual_compact_still_folds_everything_in_chunks(scripted_llm_factory, make_loop):
    brain = Brain()
    llm = scripted_llm_factory([brain] * 40, context_window=8000)
    loop, _ = await make_loop(llm, models=SMALL, context=ContextSettings(auto_compact=False))
    seed(loop, 30, words=300)

    result = await loop.compact()

    assert result.ok and brain.summary_requests >= 3
