"""The store on damaged files: a lost meta line is rebuilt and reported, hostile lines never break listing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from catbuddy.session.records import read_session_file
from catbuddy.session.store import META_REBUILT, SessionStore


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions")


def without_meta(store: SessionStore, tmp_path: Path) -> str:
    """A session with two messages whose first (meta) line has been deleted."""
    with store.create(tmp_path, "gpt-4o") as session:
        session.append_message({"role": "user", "content": "fix the parser"})
        session.append_message({"role": "assistant", "content": "done"})
    lines = session.path.read_bytes().split(b"\n", 1)
    session.path.write_bytes(lines[1])
    return session.id


def test_a_session_without_its_meta_line_is_still_listed_with_the_repair_noted(
    store: SessionStore, tmp_path: Path
) -> None:
    session_id = without_meta(store, tmp_path)
    (info,) = store.list()
    assert info.id == session_id and info.message_count == 2
    assert info.first_user_message == "fix the parser"
    assert info.created_at is not None  # from the first record's time
    assert info.problems == (META_REBUILT,)


def test_continue_finds_a_session_without_its_meta_line(store: SessionStore, tmp_path: Path) -> None:
    session_id = without_meta(store, tmp_path)
    latest = store.latest(tmp_path)
    assert latest is not None and latest.id == session_id


def test_opening_it_rebuilds_the_meta_reports_it_and_appends_it_once(
    store: SessionStore, tmp_path: Path
) -> None:
    session_id = without_meta(store, tmp_path)
    before = store.path_for(session_id).read_bytes()
    with store.open(session_id) as session:
        loaded = session.load()
        assert session.meta.session_id == session_id and session.meta.extra == {"rebuilt": True}
        assert any(META_REBUILT in p for p in loaded.problems)
        assert [m.message["content"] for m in loaded.messages] == ["fix the parser", "done"]
        session.append_message({"role": "user", "content": "next"})
    after = store.path_for(session_id).read_bytes()
    assert after.startswith(before)  # nothing already there was rewritten
    reread = read_session_file(store.path_for(session_id))
    assert reread.meta is not None and reread.meta.session_id == session_id and reread.problems == []
    (info,) = store.list()
    assert info.problems == ()  # the appended meta record is found: repaired for good
    with store.open(session_id) as again:
        assert again.load().problems == []


def test_a_deeply_nested_line_in_an_older_session_does_not_break_listing(
    store: SessionStore, tmp_path: Path
) -> None:
    with store.create(tmp_path, "m") as old:
        old.append_message({"role": "user", "content": "old work"})
    with old.path.open("ab") as handle:
        handle.write(b'{"type":"message","id":"m000002","role":"user","content":' + b"[" * 100_000 + b"]}\n")
        handle.write(b"[" * 100_000 + b"\n")
    os.utime(old.path, (1_700_000_000, 1_700_000_000))
    with store.create(tmp_path, "m") as new:
        new.append_message({"role": "user", "content": "new work"})
    infos = store.list()
    assert [i.first_user_message for i in infos] == ["new work", "old work"]
    assert store.latest(tmp_path).id == new.id  # type: ignore[union-attr]


def test_a_session_whose_first_line_is_nested_deeply_is_listed_without_meta(
    store: SessionStore, tmp_path: Path
) -> None:
    path = store.sessions_dir / "20260101-000000-abcdef.jsonl"
    store.sessions_dir.mkdir(parents=True)
    hostile = b'{"type":"meta","x":' + b"[" * 100_000 + b"]}\n"
    path.write_bytes(
        hostile
        + json.dumps(
            {
                "type": "message",
                "id": "m000001",
                "ts": "2026-01-01T00:00:00+00:00",
                "role": "user",
                "content": "hi",
            }
        ).encode()
        + b"\n"
    )
    (info,) = store.list()
    assert info.first_user_message == "hi" and info.problems == (META_REBUILT,)
