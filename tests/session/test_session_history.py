"""Rebuilding the working history: the latest summary plus the messages after what it folds."""

from __future__ import annotations

from pathlib import Path

from catbuddy.session.history import SUMMARY_PREFIX, rebuild_history, summary_message
from catbuddy.session.records import CompactionRecord, EventRecord, MessageRecord, Record
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
