"""Rebuilding the working history: the latest summary plus the messages after what it folds."""

from __future__ import annotations

from pathlib import Path

from catbuddy.session.history import SUMMARY_PREFIX, active_compactions, rebuild_history, summary_message
from catbuddy.session.records import (
    CompactionRecord,
    CompactionUndoRecord,
    EventRecord,
    MessageRecord,
    Record,
    read_session_file,
)
from catbuddy.session.store import SessionStore


def msg(n: int, content: str | None = None) -> MessageRecord:
    role = "user" if n % 2 else "assistant"
    return MessageRecord(id=f"m{n:06d}", ts=None, message={"role": role, "content": content or f"text {n}"})


def compaction(n: int, summary: str, folded_through: str) -> CompactionRecord:
    return CompactionRecord(id=f"c{n:06d}", ts=None, summary=summary, folded_through=folded_through)


def ids(records: list[Record]) -> list[str]:
    return [entry.id for entry in rebuild_history(records).entries]


def test_without_a_compaction_every_message_is_kept_and_events_are_ignored() -> None:
    records: list[Record] = [msg(1), EventRecord(ts=None, kind="stop"), msg(2), msg(3)]
    history = rebuild_history(records)
    assert history.summary is None and history.summary_id is None
    assert [e.id for e in history.entries] == ["m000001", "m000002", "m000003"]
    assert history.messages == [m.message for m in (msg(1), msg(2), msg(3))]
    assert history.problems == []


def test_one_compaction_keeps_its_summary_and_the_messages_after_folded_through() -> None:
    records: list[Record] = [
        msg(1),
        msg(2),
        msg(3),
        msg(4),
        compaction(1, "first four, half folded", "m000002"),
        msg(5),
    ]
    history = rebuild_history(records)
    assert history.summary == "first four, half folded"
    assert history.summary_id == "c000001"
    assert [e.id for e in history.entries] == ["m000003", "m000004", "m000005"]


def test_with_two_compactions_the_latest_wins() -> None:
    records: list[Record] = [
        msg(1), msg(2), compaction(1, "old", "m000001"),
        msg(3), msg(4), msg(5), compaction(2, "new", "m000004"),
        msg(6),
    ]  # fmt: skip
    history = rebuild_history(records)
    assert (history.summary, history.summary_id) == ("new", "c000002")
    assert ids(records) == ["m000005", "m000006"]


def test_a_missing_folded_through_message_keeps_every_message_and_says_so() -> None:
    records: list[Record] = [msg(1), msg(3), compaction(1, "sum", "m000002"), msg(4)]
    history = rebuild_history(records)
    assert history.summary == "sum"
    assert [e.id for e in history.entries] == ["m000001", "m000003", "m000004"]
    assert len(history.problems) == 1
    assert "m000002" in history.problems[0] and "keeping all 3 messages" in history.problems[0]


def undo(compaction_id: str) -> CompactionUndoRecord:
    return CompactionUndoRecord(ts=None, voids=compaction_id)


def test_an_undo_brings_back_the_history_as_it_was_before_the_compaction() -> None:
    before: list[Record] = [msg(1), msg(2), compaction(1, "old", "m000001"), msg(3), msg(4), msg(5)]
    records = [*before, compaction(2, "new", "m000004"), msg(6), undo("c000002")]
    history = rebuild_history(records)
    expected = rebuild_history([*before, msg(6)])
    assert (history.summary, history.summary_id) == ("old", "c000001")
    assert [(e.id, e.message) for e in history.entries] == [(e.id, e.message) for e in expected.entries]
    assert ids(records) == ["m000002", "m000003", "m000004", "m000005", "m000006"]
    assert history.problems == []


def test_several_undos_walk_back_several_compactions() -> None:
    records: list[Record] = [
        msg(1), msg(2), compaction(1, "one", "m000001"), msg(3), compaction(2, "two", "m000002"),
        msg(4), compaction(3, "three", "m000003"), undo("c000003"), undo("c000002"),
    ]  # fmt: skip
    history = rebuild_history(records)
    assert history.summary_id == "c000001" and ids(records) == ["m000002", "m000003", "m000004"]
    history = rebuild_history([*records, undo("c000001")])
    assert history.summary is None and history.folded == 0 and len(history.entries) == 4


def test_a_compaction_after_an_undo_counts_and_can_be_undone_in_turn() -> None:
    records: list[Record] = [
        msg(1), msg(2), msg(3), compaction(1, "one", "m000002"), undo("c000001"), msg(4),
        compaction(2, "again", "m000003"),
    ]  # fmt: skip
    assert rebuild_history(records).summary_id == "c000002"
    assert [c.id for c in active_compactions(records)] == ["c000002"]
    assert rebuild_history([*records, undo("c000002")]).summary is None


def test_an_undo_of_an_unknown_compaction_changes_nothing_and_says_so() -> None:
    records: list[Record] = [msg(1), msg(2), compaction(1, "one", "m000001"), undo("c000009")]
    history = rebuild_history(records)
    assert history.summary_id == "c000001"
    assert any("c000009" in p for p in history.problems)


def test_the_history_counts_folded_messages_and_keeps_the_records_data() -> None:
    records: list[Record] = [
        msg(1), msg(2), msg(3),
        CompactionRecord("c000001", None, "s", "m000002", extra={"ledger": {"reads": {"a": "m1"}}}),
    ]  # fmt: skip
    history = rebuild_history(records)
    assert history.folded == 2
    assert history.compaction_data == {"ledger": {"reads": {"a": "m1"}}}


def test_undo_records_are_stored_and_read_back(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    with store.create(tmp_path, "m") as session:
        first = session.append_message({"role": "user", "content": "one"})
        session.append_message({"role": "assistant", "content": "two"})
        compaction_id = session.append_compaction("sum", first)
        session.append_compaction_undo(compaction_id)
        path = session.path
    lines = path.read_text().splitlines()
    assert lines[-1].startswith('{"type":"compaction_undo"') and f'"voids":"{compaction_id}"' in lines[-1]
    loaded = read_session_file(path)
    assert [r.voids for r in loaded.records if isinstance(r, CompactionUndoRecord)] == [compaction_id]
    assert rebuild_history(loaded.records).summary is None


def test_an_undo_record_without_the_compaction_it_voids_is_a_corrupt_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"meta","session_id":"s"}\n{"type":"compaction_undo","ts":null}\n')
    loaded = read_session_file(path)
    assert loaded.corrupt_lines == [2] and "compaction it voids" in loaded.problems[1]


def test_the_summary_message_is_a_user_message_with_the_fixed_prefix() -> None:
    assert summary_message("we fixed the bug") == {
        "role": "user",
        "content": "[Previous conversation summary]: we fixed the bug",
    }
    assert SUMMARY_PREFIX == "[Previous conversation summary]: "


def test_history_rebuilt_from_a_stored_session_matches_what_was_appended(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    with store.create(tmp_path, "m") as session:
        first = session.append_message({"role": "user", "content": "one"})
        session.append_message({"role": "assistant", "content": "two"})
        session.append_compaction(
            "one and two", first, instructions="keep names", tokens_before=50, tokens_after=10
        )
        session.append_message({"role": "user", "content": "three"})
        loaded = session.load()
    history = rebuild_history(loaded.records)
    assert history.summary == "one and two"
    assert history.messages == [{"role": "assistant", "content": "two"}, {"role": "user", "content": "three"}]
    folded = [r for r in loaded.records if isinstance(r, CompactionRecord)][0]
    assert folded.extra == {"instructions": "keep names", "tokens_before": 50, "tokens_after": 10}
