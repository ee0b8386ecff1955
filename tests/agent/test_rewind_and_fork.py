"""/undo, /rewind and /fork through the loop: what the session file records and what the next request
sends (docs/architecture.md §15)."""

from __future__ import annotations

import json

from catbuddy.agent.events import CheckpointSaved, FilesRestored
from catbuddy.config import ContextSettings
from catbuddy.session.records import CompactionRecord
from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply


def events_of(path, kind: str) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line for line in lines if line.get("type") == "event" and line.get("kind") == kind]


async def two_turns(workspace, scripted_llm, make_loop, **settings):
    root = workspace.work_root
    (root / "a.txt").write_text("one\n")
    scripted_llm.push(
        Reply.tool_call("edit_file", {"path": "a.txt", "old_string": "one", "new_string": "two"}),
        Reply.text("first done"),
        Reply.tool_call("write_file", {"path": "b.txt", "content": "new\n"}),
        Reply.text("second done"),
    )
    loop, events = await make_loop(scripted_llm, **settings)
    await loop.run_turn("first request")
    await loop.run_turn("second request")
    return loop, events


async def test_each_turn_that_changes_files_is_checkpointed(workspace, scripted_llm, make_loop):
    loop, events = await two_turns(workspace, scripted_llm, make_loop)
    saved = events.of(CheckpointSaved)
    assert [(e.turn_id, e.files) for e in saved] == [("t1", 1), ("t2", 1)]
    assert [e["message_id"] for e in events_of(loop.session.path, "checkpoint")] == [
        saved[0].message_id,
        saved[1].message_id,
    ]


async def test_undo_in_the_app_restores_the_latest_turn_and_records_it(workspace, scripted_llm, make_loop):
    loop, events = await two_turns(workspace, scripted_llm, make_loop)
    plan = await loop.plan_restore("undo")
    assert plan is not None and plan.paths == ["b.txt"] and plan.conflicts == []
    assert await loop.restore_files(plan, "undo") == ["b.txt"]
    assert not (workspace.work_root / "b.txt").exists()
    assert (workspace.work_root / "a.txt").read_text() == "two\n"  # the earlier turn stays
    [restored] = events.of(FilesRestored)
    assert restored.action == "undo" and restored.turns == ["t2"]
    assert events_of(loop.session.path, "files_restored")[0]["paths"] == ["b.txt"]
    scripted_llm.push(Reply.text("noted"))
    await loop.run_turn("go on")
    last_user = str(scripted_llm.requests[-1]["messages"][-1]["content"])
    assert (
        last_user.startswith("go on")
        and "ran undo; these files are back as they were before turn t2: b.txt." in last_user
    )


async def test_an_undo_reaches_the_compaction_ledger(workspace, scripted_llm, make_loop):
    loop, _ = await two_turns(workspace, scripted_llm, make_loop, context=ContextSettings(compact_keep_recent=2))
    plan = await loop.plan_restore("undo")
    assert plan is not None
    await loop.restore_files(plan, "undo")
    scripted_llm.push(Reply.text("noted"), Reply.text("fine"), Reply.text("## Goal\nthe summary"))
    await loop.run_turn("go on")
    await loop.run_turn("and then")  # the last turn stays verbatim; "go on" is folded

    result = await loop.compact()

    assert result.ok
    [record] = [r for r in loop.session.load().records if isinstance(r, CompactionRecord)]
    [note] = record.extra["ledger"]["restores"]
    assert note["tool"] == "undo" and note["text"] == "`b.txt` back as before turn t2"
    go_on = next(e for e in loop.conversation.transcript if str(e.message.get("content")).startswith("go on"))
    assert note["id"] == go_on.id


async def test_rewind_restores_files_and_the_next_request_ends_before_the_message(
    workspace, scripted_llm, make_loop
):
    loop, _ = await two_turns(workspace, scripted_llm, make_loop)
    first_user = next(
        e.id for e in loop.transcript() if str(e.message.get("content")).startswith("first request")
    )
    plan = await loop.plan_restore("rewind", first_user)
    assert plan is not None and plan.paths == ["a.txt", "b.txt"]
    await loop.restore_files(plan, "rewind")
    await loop.rewind_conversation(first_user)

    assert (workspace.work_root / "a.txt").read_text() == "one\n"
    assert not (workspace.work_root / "b.txt").exists()
    scripted_llm.push(Reply.text("fresh start"))
    await loop.run_turn("another request")
    sent = [str(m.get("content")) for m in scripted_llm.requests[-1]["messages"] if m["role"] == "user"]
    assert sent[-1].startswith("another request")
    assert not any(s.startswith(("first request", "second request")) for s in sent)
    # The file only grew: the rewound messages are still on disk, with the rewind record after them.
    text = loop.session.path.read_text()
    assert (
        "first request" in text
        and events_of(loop.session.path, "conversation_rewound")[0]["to"] == first_user
    )


async def test_fork_carries_the_history_up_to_a_message(workspace, scripted_llm, make_loop):
    loop, _ = await two_turns(workspace, scripted_llm, make_loop)
    second_user = next(
        e.id for e in loop.transcript() if str(e.message.get("content")).startswith("second request")
    )
    new_id = await loop.fork(second_user)

    store = SessionStore(workspace.sessions_dir)
    forked = store.open(new_id)
    try:
        loaded = forked.load()
    finally:
        forked.close()
    contents = [str(r.message.get("content")).split("\n")[0] for r in loaded.messages]
    assert "first request" in contents and "first done" in contents
    assert "second request" not in contents
    assert events_of(loop.session.path, "session_forked")[0]["fork"] == new_id
    assert events_of(store.find(new_id), "session_forked")[0]["source"] == loop.session_id
