"""Compaction that fails, cannot help, or is forced by the provider (docs/architecture.md §5): the history stays as
it was, failures pause auto-compaction, no loops, and a context-length error gets exactly one retry."""

from __future__ import annotations

import pytest
from agent_helpers import session_events
from compaction_helpers import Brain, chat_requests, seed, summary_requests, summary_text

from catbuddy.agent.events import CompactionFinished, ErrorOccurred, Notice, TurnEndReason
from catbuddy.config import ContextSettings, ModelSpec
from catbuddy.session.records import CompactionRecord
from catbuddy.testing.script import Reply

NEVER = ContextSettings(compact_message_threshold=10**6, compact_token_ratio=100.0)

FAILURES = {
    "provider error": Reply.error(500, "the summarizer is down"),
    "empty summary": "   ",
    "summary longer than what it replaces": "an endless summary " * 2000,
}


def history_ids(loop) -> list[str]:
    return [entry.id for entry in loop.conversation.history.entries]


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_a_failed_compaction_leaves_the_history_as_it_was_with_a_notice(
    failure, scripted_llm_factory, make_loop
):
    llm = scripted_llm_factory([Brain(summaries=[FAILURES[failure]])] * 5)
    loop, events = await make_loop(llm)
    seed(loop, 26)
    ids_before = history_ids(loop)

    outcome = await loop.run_turn("go on")

    assert outcome.reason is TurnEndReason.DONE  # the turn itself still runs
    assert loop.conversation.history.summary is None
    assert history_ids(loop)[: len(ids_before)] == ids_before
    assert len(chat_requests(llm)[-1].messages) == 1 + 53  # system + every message, nothing folded
    [notice] = [n for n in events.of(Notice) if n.text.startswith("Compaction failed")]
    assert notice.level == "warning" and "unchanged" in notice.text
    assert not events.of(CompactionFinished)[0].ok
    assert not [r for r in loop.session.load().records if isinstance(r, CompactionRecord)]
    assert session_events(loop, "compaction_failed")


async def test_three_failures_in_a_row_pause_auto_compaction_until_compact(scripted_llm_factory, make_loop):
    brain = Brain(summaries=[Reply.error(500, "down")] * 3)
    llm = scripted_llm_factory([brain] * 20)
    loop, events = await make_loop(llm)
    seed(loop, 26)

    for turn in range(5):
        await loop.run_turn(f"turn {turn}")

    assert brain.summary_requests == 3  # turns 4 and 5 did not try again
    assert loop.compaction().paused
    assert "paused" in [n for n in events.of(Notice) if n.text.startswith("Compaction failed")][-1].text

    result = await loop.compact()  # the user's /compact resumes it

    assert result.ok and not loop.compaction().paused
    assert loop.conversation.history.compaction_data["prose"] == summary_text(4)


async def test_a_success_resets_the_failure_count(scripted_llm_factory, make_loop):
    brain = Brain(summaries=[Reply.error(500, "down"), Reply.error(500, "down")])
    llm = scripted_llm_factory([brain] * 20)
    loop, _ = await make_loop(llm)
    seed(loop, 26)
    for turn in range(3):
        await loop.run_turn(f"turn {turn}")
    assert loop.compaction().state.failures == 0
    assert loop.conversation.history.compaction_data["prose"] == summary_text(3)


async def test_no_compaction_when_the_fixed_part_alone_is_over_the_threshold(
    scripted_llm_factory, make_loop, workspace
):
    # AGENTS.md so large that the system prompt alone passes 80% of the budget (but still fits it).
    (workspace.work_root / "AGENTS.md").write_text("Always follow the house rules. " * 600)
    llm = scripted_llm_factory([Brain()] * 10, context_window=9000)
    loop, events = await make_loop(llm, models={"scripted": ModelSpec(9000, 1000)})
    seed(loop, 26)
    assert loop.compaction().measure(with_history=False).tokens > loop.turn_context().compact_threshold

    for turn in range(3):
        assert (await loop.run_turn(f"turn {turn}")).reason is TurnEndReason.DONE

    assert not summary_requests(llm)
    warnings = [n for n in events.of(Notice) if "fixed part" in n.text]
    assert len(warnings) == 1  # said once, not on every call
    assert "AGENTS.md" in warnings[0].text and f"{loop.turn_context().compact_threshold:,}" in warnings[0].text
    assert not llm.over_budget


# --- reactive recovery ---------------------------------------------------------------------------


async def test_a_context_length_error_triggers_one_compaction_and_one_retry(scripted_llm_factory, make_loop):
    # We believe the window is 16k; the server really has 6.3k. (The user's words the summary carries
    # are held to a small share here: the real window is only just big enough for the kept part.)
    llm = scripted_llm_factory([Brain()] * 10, context_window=6300)
    context = ContextSettings(compact_message_threshold=10**6, compact_token_ratio=100.0, compact_user_tokens=200)
    loop, events = await make_loop(llm, models={"scripted": ModelSpec(16000, 1000)}, context=context)
    seed(loop, 20, words=120)

    outcome = await loop.run_turn("go on")

    assert outcome.reason is TurnEndReason.DONE
    outcomes = [("summary" if r in summary_requests(llm) else "chat", r.outcome) for r in llm.requests]
    assert outcomes == [
        ("chat", "context_length_exceeded"),
        ("summary", "completed"),
        ("chat", "streamed"),
    ]
    assert loop.conversation.history.compaction_data["prose"] == summary_text(1)
    assert loop.conversation.history.compaction_data["mode"] == "chunked"  # the live prefix was just refused
    assert not events.of(ErrorOccurred)
    assert session_events(loop, "context_length_exceeded")


async def test_a_second_context_length_error_is_reported_not_retried_again(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 10, context_window=3000)
    loop, events = await make_loop(llm, models={"scripted": ModelSpec(16000, 1000)}, context=NEVER)
    seed(loop, 20, words=80)

    outcome = await loop.run_turn("go on")

    assert outcome.reason is TurnEndReason.ERROR
    assert len(chat_requests(llm)) == 2  # the call and exactly one retry
    assert [r.outcome for r in chat_requests(llm)] == ["context_length_exceeded"] * 2
    assert "still too large" in events.of(ErrorOccurred)[-1].message


async def test_when_compaction_cannot_help_a_tighter_snip_with_calibration_retries_once(
    scripted_llm_factory, make_loop
):
    # Few messages (nothing to fold), but the provider counts 1.4× what we count.
    llm = scripted_llm_factory([Brain()] * 10, context_window=8000, prompt_token_factor=1.4)
    loop, events = await make_loop(llm, models={"scripted": ModelSpec(8000, 500)}, context=NEVER)
    seed(loop, 8, words=350)

    outcome = await loop.run_turn("go on")

    assert outcome.reason is TurnEndReason.DONE
    assert not summary_requests(llm)
    first, retry = chat_requests(llm)
    assert first.outcome == "context_length_exceeded" and retry.outcome == "streamed"
    assert len(retry.messages) < len(first.messages)  # snipped tighter
    assert loop.turn_context().calibration_factor >= 1.4
    assert any("calibration" in n.text for n in events.of(Notice))
