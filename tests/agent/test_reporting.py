"""One reporting channel (docs/architecture.md §5, §6): an event is reported once, on the bus; the
session keeps the types marked as records, with the event's kind and fields; secrets are scrubbed at
one place, the bus, so the screen, ``--stream-json`` and the session file get the same safe copy. Files
written before this read in today's shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_helpers import session_events
from test_events import SAMPLES

from catbuddy.agent import events as ev
from catbuddy.agent.bus import EventBus
from catbuddy.cli_commands.compactions import show_session
from catbuddy.session.conversation import Conversation
from catbuddy.session.records import EventRecord, read_session_file, rebuild_meta
from catbuddy.session.store import SessionStore
from catbuddy.session.usage import usage_of
from catbuddy.testing.script import Reply

RECORDED = [event for event in SAMPLES if event.record]
KEY = "sk-" + "x9" * 20


def same_event(record: EventRecord) -> ev.Event:
    return ev.event_from_json({"kind": record.kind, **record.data})


def without_time(event: ev.Event) -> dict:
    data = event.to_json()
    del data["ts"]
    return data


def test_the_records_are_the_stop_error_governance_approval_usage_and_setting_events() -> None:
    kinds = {cls.kind for cls in ev.EVENT_TYPES.values() if cls.record}
    assert kinds == {
        "approval_resolved", "usage", "governance", "error", "model", "approval_mode", "stop",
        "iteration_cap", "context_length_exceeded", "compaction_failed", "plan_mode", "subagent",
        "checkpoint", "files_restored",
    }  # fmt: skip


@pytest.mark.parametrize("event", RECORDED, ids=lambda event: event.kind)
async def test_a_reported_record_event_is_stored_with_its_kind_and_fields_and_reads_back_the_same(
    event: ev.Event, scripted_llm, make_loop
) -> None:
    loop, received = await make_loop(scripted_llm)

    loop.emit(event)

    [record] = session_events(loop)
    assert record.kind == event.kind
    assert without_time(same_event(record)) == without_time(event) == without_time(received.events[-1])


async def test_events_that_are_not_records_are_not_stored(scripted_llm, make_loop) -> None:
    loop, _ = await make_loop(scripted_llm)
    for event in SAMPLES:
        if not event.record:
            loop.emit(event)
    assert session_events(loop) == []


async def test_a_turn_stores_its_usage_and_the_approval_with_the_field_names_of_its_event(
    workspace, scripted_llm, make_loop
) -> None:
    scripted_llm.push(Reply.tool_call("exec", {"command": "rm -rf /"}), Reply.text("no"))
    loop, received = await make_loop(scripted_llm, approval="yolo")

    await loop.run_turn("clean")

    [approval] = session_events(loop, "approval_resolved")
    [event] = received.of(ev.ApprovalResolved)
    assert approval.data == event.record_fields()
    assert approval.data["name"] == "exec" and approval.data["decision"] == "denied_by_rule"
    assert approval.data["reason"].startswith("refused:")
    assert [r.data for r in session_events(loop, "usage")] == [
        e.record_fields() for e in received.of(ev.UsageReported)
    ]


async def test_a_secret_in_an_event_is_scrubbed_once_for_the_screen_and_the_file_but_messages_stay_exact(
    scripted_llm, make_loop
) -> None:
    loop, received = await make_loop(scripted_llm, api_key=KEY)
    loop.conversation.append({"role": "user", "content": f"my test key is {KEY}"})

    loop.emit(ev.ErrorOccurred(f"Error 401: Incorrect API key provided: {KEY}", "check https://u:pw@host/"))
    loop.emit(ev.Notice(f"retrying with {KEY}"))

    shown = received.of(ev.ErrorOccurred)[0]
    assert KEY not in shown.message and ":pw@" not in shown.hint
    assert KEY not in received.of(ev.Notice)[-1].text
    [record] = session_events(loop, "error")
    assert record.data == shown.record_fields()
    text = loop.session.path.read_text(encoding="utf-8")
    assert text.count(KEY) == 1  # only in the user's own message, kept exactly
    assert read_session_file(loop.session.path).messages[0].message["content"] == f"my test key is {KEY}"


def test_the_bus_leaves_events_that_are_neither_records_nor_diagnostics_alone() -> None:
    bus = EventBus([KEY])
    seen: list[ev.Event] = []
    bus.add_listener(seen.append)
    delta = ev.TextDelta(f"the key is {KEY}")  # the reply as the model streams it; stored as a message
    bus.emit(delta)
    assert seen == [delta]


# --- files written before events and records were one --------------------------------------------


OLD_SESSION = [
    {"type": "meta", "session_id": "20240101-000000-abcdef", "created_at": "2024-01-01T00:00:00Z",
     "work_root": "", "model": "gpt-4o", "catbuddy_version": "0.1.0"},
    {"type": "message", "id": "m000001", "ts": "t", "role": "user", "content": "hi"},
    {"type": "event", "ts": "t", "kind": "governance", "orphans_dropped": 1, "tokens_before": 900},
    {"type": "event", "ts": "t", "kind": "approval", "tool": "exec", "call_id": "c1", "decision": "denied_by_rule",
     "reason": "refused: deletes /"},
    {"type": "event", "ts": "t", "kind": "usage", "prompt_tokens": 1200, "completion_tokens": 40,
     "cached_tokens": 1024, "counted_prompt_tokens": 1180},
    {"type": "event", "ts": "t", "kind": "stop", "turn": 1},
    {"type": "event", "ts": "t", "kind": "error", "message": "boom"},
    {"type": "event", "ts": "t", "kind": "model", "model": "gpt-4.1"},
]  # fmt: skip


def write_old_session(sessions: Path) -> Path:
    sessions.mkdir(parents=True, exist_ok=True)
    path = sessions / "20240101-000000-abcdef.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in OLD_SESSION), encoding="utf-8")
    return path


def test_an_old_sessions_records_read_as_todays_events(tmp_path: Path) -> None:
    loaded = read_session_file(write_old_session(tmp_path))
    events = [same_event(r) for r in loaded.records if isinstance(r, EventRecord)]

    governance, approval, usage, stop, error, model = events
    assert isinstance(governance, ev.GovernanceReported) and governance.report["orphans_dropped"] == 1
    assert isinstance(approval, ev.ApprovalResolved)
    assert (approval.name, approval.call_id, approval.decision) == ("exec", "c1", "denied_by_rule")
    assert isinstance(usage, ev.UsageReported) and usage.cached_tokens == 1024
    assert isinstance(stop, ev.TurnStopped) and stop.turn == 1
    assert isinstance(error, ev.ErrorOccurred) and error.message == "boom"
    assert isinstance(model, ev.ModelChanged) and model.model == "gpt-4.1"
    assert usage_of(loaded.records).prompt_tokens == 1200
    assert rebuild_meta("x", loaded.records).model == "gpt-4.1"


def test_an_old_session_opens_and_shows(tmp_path: Path, workspace) -> None:
    write_old_session(workspace.sessions_dir)
    conversation = Conversation.open(SessionStore(workspace.sessions_dir), "20240101-000000-abcdef")
    try:
        assert conversation.usage.cached_tokens == 1024 and conversation.problems == []
    finally:
        conversation.close()
    assert show_session(workspace, "20240101")["messages"] == 1
