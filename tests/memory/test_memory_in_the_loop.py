"""Memory through the agent loop and the scripted server: entries from sessions and compactions, the
model's own edits versioned, Dream by hand and in the background, and writes only between turns."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from dream_helpers import WHOLE, DreamBrain, answer, request_text

from catbuddy.agent.events import (
    CompactionFinished,
    DreamChoice,
    DreamFinished,
    DreamProposed,
    Notice,
    TurnEnded,
)
from catbuddy.config import MemorySettings
from catbuddy.memory.journal import Journal
from catbuddy.memory.paths import MemoryPaths
from catbuddy.memory.state import DreamState
from catbuddy.memory.versions import MemoryVersions
from catbuddy.messages import content_text
from catbuddy.testing.script import Reply

COMPACT_MARK = "You are compacting the history"
FAST = MemorySettings(dream_idle_minutes=0.002)  # about 0.1 s


def pending(paths: MemoryPaths) -> list[Any]:
    return Journal(paths).pending().entries


def system_prompt(body: dict[str, Any]) -> str:
    return content_text(body["messages"][0]["content"])


# --- entries ---------------------------------------------------------------------------------------


async def test_a_session_that_ends_leaves_its_turns_as_an_entry(scripted_llm, loops, paths) -> None:
    scripted_llm.push(Reply.text("Noted: pnpm from now on."), Reply.text("Sure."))
    loop, _ = await loops(scripted_llm)
    await loop.run_turn("I always use pnpm, never npm.")
    await loop.run_turn("And answer in German.")
    session = loop.session_id
    assert pending(paths) == []  # nothing until the session ends
    await loop.aclose()
    [entry] = pending(paths)
    assert (entry.kind, entry.session_id) == ("session", session)
    assert entry.content == (
        "User: I always use pnpm, never npm.\nAssistant: Noted: pnpm from now on.\n\n"
        "User: And answer in German.\nAssistant: Sure."
    )
    assert not paths.journal.is_relative_to(loop.workspace.work_root)


async def test_new_and_resume_end_the_old_session_and_only_new_turns_count_again(
    scripted_llm, loops, paths
) -> None:
    scripted_llm.push(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    loop, _ = await loops(scripted_llm)
    await loop.run_turn("first session fact")
    first = loop.session_id
    await loop.new_session()
    await loop.run_turn("second session fact")
    second = loop.session_id
    await loop.resume(first)
    assert [e.session_id for e in pending(paths)] == [first, second]
    await loop.run_turn("a later fact in the first session")
    await loop.aclose()
    assert [e.session_id for e in pending(paths)] == [first, second, first]
    texts = [e.content for e in pending(paths)]
    assert texts[0] == "User: first session fact\nAssistant: one"
    assert texts[1] == "User: second session fact\nAssistant: two"
    assert texts[2] == "User: a later fact in the first session\nAssistant: three"


async def test_a_session_with_nothing_new_leaves_no_entry(scripted_llm, loops, paths) -> None:
    loop, _ = await loops(scripted_llm)
    await loop.new_session()
    await loop.aclose()
    assert pending(paths) == []


async def test_a_successful_compaction_appends_its_summary(scripted_llm, loops, paths) -> None:
    summary = "## Goal and user requests\nThe user wants pnpm everywhere."

    def brain(body: dict[str, Any]) -> Any:
        # a chunked summary request has the instructions as its system prompt, one on the live prefix last
        if any(COMPACT_MARK in content_text(body["messages"][i]["content"]) for i in (0, -1)):
            return Reply.text(summary, chunk_size=WHOLE)
        return Reply.text("ok", chunk_size=WHOLE)

    scripted_llm.push(*[brain] * 5)
    loop, events = await loops(scripted_llm)
    for n in range(30):
        loop.conversation.append({"role": "user", "content": f"q{n} " + "lorem " * 20})
        loop.conversation.append({"role": "assistant", "content": f"a{n}"})
    result = await loop.compact()
    assert result.ok
    [entry] = pending(paths)
    # the summary as pinned: the model's prose, then the user's own words and the ledger
    assert entry.kind == "compaction" and entry.content.startswith(summary)
    assert entry.content == events.of(CompactionFinished)[-1].summary
    assert entry.extra["record_id"] == result.record_id == events.of(CompactionFinished)[-1].record_id


# --- the model's own edits -------------------------------------------------------------------------


async def test_the_models_edit_of_a_memory_file_keeps_the_previous_version(
    scripted_llm, loops, paths, workspace
) -> None:
    paths.project_memory.parent.mkdir(parents=True, exist_ok=True)
    paths.project_memory.write_text("# Memory\n\n- old fact\n")
    scripted_llm.push(
        Reply.tool_call(
            "edit_file",
            {"path": ".catbuddy/MEMORY.md", "old_string": "- old fact", "new_string": "- new fact"},
        ),
        Reply.tool_call(
            "write_file", {"path": "~/.catbuddy/workspace/MEMORY.md", "content": "- likes tea\n"}
        ),
        Reply.tool_call("write_file", {"path": "notes.md", "content": "not memory"}),
        Reply.text("Recorded."),
    )
    loop, _ = await loops(scripted_llm)
    await loop.run_turn("remember the new fact")
    changes = MemoryVersions(paths).history().changes
    assert [(c.source, c.records[0].file) for c in changes] == [
        ("tool:edit_file", "project"),
        ("tool:write_file", "global"),
    ]
    assert changes[0].sessions == (loop.session_id,)
    before, after = MemoryVersions(paths).texts(changes[0], "project")
    assert before == "# Memory\n\n- old fact\n" and after == "# Memory\n\n- new fact\n"
    assert paths.global_memory.read_text() == "- likes tea\n"


async def test_a_refused_write_to_memory_leaves_no_version(scripted_llm, loops, paths) -> None:
    scripted_llm.push(
        Reply.tool_call(
            "edit_file", {"path": ".catbuddy/MEMORY.md", "old_string": "nope", "new_string": "x"}
        ),
        Reply.text("That failed."),
    )
    loop, _ = await loops(scripted_llm)
    await loop.run_turn("edit memory")
    assert MemoryVersions(paths).history().changes == []


# --- Dream by hand ---------------------------------------------------------------------------------


async def test_facts_stated_in_sessions_reach_the_next_requests_system_prompt(
    scripted_llm, loops, paths
) -> None:
    brain = DreamBrain([answer("ADD: Prefers pnpm over npm.", "ADD: The API lives in `src/api/`.")])
    scripted_llm.push(*[brain] * 6)
    loop, _ = await loops(scripted_llm)
    await loop.run_turn("I prefer pnpm. Our API is in src/api/.")
    await loop.new_session()
    result = await loop.dream()
    assert result.status == "applied"
    assert "- Prefers pnpm over npm." in paths.global_memory.read_text()
    assert Journal(paths).cursor()[0] == 1
    await loop.run_turn("what do you know?")
    prompt = system_prompt(brain.chat_bodies[-1])
    assert "## Long-Term Memory (You)" in prompt and "Prefers pnpm over npm." in prompt
    assert "## Project Memory" in prompt and "The API lives in `src/api/`." in prompt
    dream_text = request_text(brain.dream_bodies[0])
    assert "User: I prefer pnpm. Our API is in src/api/." in dream_text


async def test_a_dream_result_arriving_during_a_turn_waits_for_the_turn_to_end(
    scripted_llm, loops, paths, journal
) -> None:
    journal.append("earlier", "session", "User: I like tea")
    dream_asked = threading.Event()
    received: list[float] = []

    def slow_chat(body: dict[str, Any]) -> Any:
        dream_asked.wait(10)  # the turn's reply streams only once Dream has its answer
        return Reply.text("a slow answer " * 20, chunk_size=4, delay=0.02)

    brain = DreamBrain([answer("ADD: Likes tea.")], chat=slow_chat)

    def model(body: dict[str, Any]) -> Any:
        reply = brain(body)
        if brain.dream_bodies and not dream_asked.is_set():
            received.append(time.time())
            dream_asked.set()
        return reply

    scripted_llm.push(*[model] * 4)
    loop, events = await loops(scripted_llm)
    seen_at_turn_end: list[str] = []
    loop.add_listener(
        lambda e: (
            seen_at_turn_end.append(paths.global_memory.read_text()) if isinstance(e, TurnEnded) else None
        )
    )
    loop.submit("tell me a story")
    await asyncio.sleep(0.05)  # the turn has sent its request
    dreaming = asyncio.create_task(loop.dream())
    turn_end = await events.wait_for(TurnEnded)
    result = await dreaming
    assert result.status == "applied"
    assert received and received[0] < turn_end.ts - 0.5  # Dream had its answer well before the turn ended
    assert "Likes tea" not in seen_at_turn_end[0]  # and still nothing was written mid-turn
    assert "- Likes tea." in paths.global_memory.read_text()
    kinds = [e.kind for e in events.items if isinstance(e, TurnEnded | DreamFinished)]
    assert kinds == ["turn_end", "dream"]
    assert len({system_prompt(body) for body in brain.chat_bodies}) == 1  # one system prompt all turn


async def test_dream_by_hand_runs_when_paused_and_resets_the_failures(
    scripted_llm, loops, paths, journal
) -> None:
    journal.append("earlier", "session", "User: x")
    DreamState(failures=3).save(paths.state)
    scripted_llm.push(DreamBrain([answer("ADD: x is y")]))
    loop, events = await loops(scripted_llm)
    result = await loop.dream()
    assert result.status == "applied" and DreamState.load(paths.state).failures == 0
    assert events.of(Notice)[-1].text == "memory: +1 −0 ~0 — /memory diff"


async def test_a_dry_run_by_hand_writes_nothing(scripted_llm, loops, paths, journal) -> None:
    journal.append("earlier", "session", "User: x")
    scripted_llm.push(DreamBrain([answer("ADD: x is y")]))
    loop, _ = await loops(scripted_llm)
    before = paths.global_memory.read_text()
    result = await loop.dream(dry_run=True)
    assert result.status == "dry_run" and "+- x is y" in result.diff
    assert paths.global_memory.read_text() == before and Journal(paths).cursor()[0] == 0


# --- Dream in the background -----------------------------------------------------------------------


async def test_entries_of_earlier_sessions_are_dreamt_soon_after_start_up(
    scripted_llm, loops, paths, journal
) -> None:
    journal.append("earlier", "session", "User: I use vim")
    scripted_llm.push(DreamBrain([answer("ADD: Uses vim.")]))
    loop, events = await loops(scripted_llm, background=True, memory=FAST)
    finished = await events.wait_for(DreamFinished)
    assert finished.status == "applied" and not finished.manual
    assert "- Uses vim." in paths.global_memory.read_text()
    assert any(n.text == "memory: +1 −0 ~0 — /memory diff" for n in events.of(Notice))
    assert loop.memory_status()["pending_entries"] == 0


async def test_idle_time_after_a_turn_starts_dream_over_new_entries(scripted_llm, loops, paths) -> None:
    brain = DreamBrain([answer("NONE", "ADD: Compaction summaries matter.")])
    scripted_llm.push(*[brain] * 3)
    loop, events = await loops(scripted_llm, background=True, memory=FAST)
    await asyncio.sleep(0.3)
    assert brain.dream_bodies == []  # nothing pending: no Dream
    await loop.run_turn("hello")
    Journal(paths).append(loop.session_id, "compaction", "## Goal\nkeep summaries")
    finished = await events.wait_for(DreamFinished)
    assert finished.status == "applied"
    assert "- Compaction summaries matter." in paths.project_memory.read_text()


async def test_automatic_dream_stays_paused_after_three_failures(scripted_llm, loops, paths, journal) -> None:
    journal.append("earlier", "session", "User: x")
    DreamState(failures=3).save(paths.state)
    loop, events = await loops(scripted_llm, background=True, memory=FAST)
    await asyncio.sleep(0.4)
    assert scripted_llm.requests == []
    assert loop.memory_status()["paused"] is True
    assert Journal(paths).cursor()[0] == 0


async def test_three_failed_background_runs_in_a_row_pause_it(scripted_llm, loops, paths, journal) -> None:
    journal.append("earlier", "session", "User: x")
    brain = DreamBrain([Reply.error(500, "the model is down", code="server_error")] * 10)
    scripted_llm.push(*[brain] * 10)
    loop, events = await loops(scripted_llm, background=True, memory=FAST)
    await events.wait_for(DreamFinished)
    for _ in range(2):  # each failure waits for new activity (and idle time) before the next try
        count = len(events.of(DreamFinished))
        await loop.run_turn("hi")
        await events.wait_for(DreamFinished, lambda e, c=count: len(events.of(DreamFinished)) > c)
    assert [e.status for e in events.of(DreamFinished)] == ["failed"] * 3
    assert "paused after 3 failed runs" in events.of(Notice)[-1].text
    await loop.run_turn("hi")
    await asyncio.sleep(0.3)
    assert len(brain.dream_bodies) == 3
    assert Journal(paths).cursor()[0] == 0 and loop.memory_status()["paused"]


async def test_a_failed_background_dream_says_so_in_one_line(scripted_llm, loops, paths, journal) -> None:
    # Issue 31: a rejected answer printed ~10 lines of nested quoting at start-up of --continue.
    journal.append("earlier", "session", "User: x")
    not_the_form = "Sure! Here are my thoughts:\n> quoted\n> > nested\n" * 4
    brain = DreamBrain([Reply.text(not_the_form, chunk_size=WHOLE)] * 2)
    scripted_llm.push(brain, brain)
    loop, events = await loops(scripted_llm, background=True, memory=FAST)

    assert (await events.wait_for(DreamFinished)).status == "failed"

    [notice] = [n for n in events.of(Notice) if "Dream" in n.text]
    assert notice.text == (
        "Dream could not update memory: the model's answer was not in the expected form"
        " — /dream to retry, details in the log"
    )


async def test_ask_mode_shows_the_diff_and_applies_only_on_yes(scripted_llm, loops, paths, journal) -> None:
    journal.append("earlier", "session", "User: I use fish")
    scripted_llm.push(DreamBrain([answer("ADD: Uses the fish shell.")]))
    loop, events = await loops(
        scripted_llm, background=True, memory=MemorySettings(dream="ask", dream_idle_minutes=0.002)
    )
    proposal = await events.wait_for(DreamProposed)
    assert "+- Uses the fish shell." in proposal.diff and proposal.counts == "+1 −0 ~0"
    assert "fish" not in paths.global_memory.read_text()
    assert loop.answer_dream(proposal.proposal_id, DreamChoice.APPLY)
    assert (await events.wait_for(DreamFinished)).status == "applied"
    assert "- Uses the fish shell." in paths.global_memory.read_text()


async def test_ask_mode_decline_skips_the_entries_and_later_keeps_them(
    scripted_llm, loops, paths, journal
) -> None:
    journal.append("earlier", "session", "User: I use fish")
    brain = DreamBrain([answer("ADD: Uses fish."), answer("ADD: Uses fish.")])
    scripted_llm.push(brain, brain)
    ask = MemorySettings(dream="ask")
    loop, events = await loops(scripted_llm, memory=ask)
    task = asyncio.create_task(loop.dream())
    proposal = await events.wait_for(DreamProposed)
    loop.answer_dream(proposal.proposal_id, "later")
    assert (await task).status == "deferred" and Journal(paths).cursor()[0] == 0
    task = asyncio.create_task(loop.dream())
    proposal = await events.wait_for(DreamProposed, lambda e: e.proposal_id != proposal.proposal_id)
    loop.answer_dream(proposal.proposal_id, "decline")
    assert (await task).status == "declined" and Journal(paths).cursor()[0] == 1
    assert "fish" not in paths.global_memory.read_text()


async def test_the_dream_events_are_plain_data_for_stream_json(scripted_llm, loops, journal) -> None:
    journal.append("earlier", "session", "User: x")
    scripted_llm.push(DreamBrain([answer("ADD: y")]))
    loop, events = await loops(scripted_llm)
    await loop.dream()
    data = json.loads(json.dumps(events.of(DreamFinished)[-1].to_json()))
    assert data["kind"] == "dream" and data["status"] == "applied" and data["change"] == 1
