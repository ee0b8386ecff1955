"""The session store: append-only writes, fsync per record, the per-session lock, listing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from catbuddy import __version__
from catbuddy.session import store as store_module
from catbuddy.session.records import read_session_file
from catbuddy.session.store import SessionClosed, SessionLocked, SessionNotFound, SessionStore

ASSISTANT_WITH_TOOLS = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "exec", "arguments": '{"cmd": "ls"}'}},
    ],
}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "print('hi')\n"}
LIST_CONTENT = {
    "role": "user",
    "content": [
        {"type": "text", "text": "what is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
    ],
}


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions")


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=30
    )


OPEN_AND_REPORT = """
    import sys
    from pathlib import Path
    from catbuddy.session.store import SessionLocked, SessionStore
    try:
        SessionStore(Path(sys.argv[1])).open(sys.argv[2])
    except SessionLocked as exc:
        print("LOCKED:", exc)
    else:
        print("OPENED")
"""


def test_messages_round_trip_exactly_with_tool_calls_names_and_content_parts(
    store: SessionStore, tmp_path: Path
) -> None:
    sent = [
        {"role": "user", "content": "héllo 世界\n\n[runtime: time=now]"},
        ASSISTANT_WITH_TOOLS,
        TOOL_RESULT,
        LIST_CONTENT,
    ]
    with store.create(tmp_path, "gpt-4o") as session:
        ids = [session.append_message(m) for m in sent]
    loaded = read_session_file(store.path_for(session.id))
    assert [m.message for m in loaded.messages] == sent
    assert [m.id for m in loaded.messages] == ids == ["m000001", "m000002", "m000003", "m000004"]


def test_the_first_line_is_the_meta_record(store: SessionStore, tmp_path: Path) -> None:
    with store.create(tmp_path, "gpt-4o-mini") as session:
        pass
    first = json.loads(session.path.read_text(encoding="utf-8").splitlines()[0])
    assert first["type"] == "meta"
    assert first["session_id"] == session.id
    assert first["work_root"] == str(tmp_path.resolve())
    assert first["model"] == "gpt-4o-mini"
    assert first["catbuddy_version"] == __version__
    assert first["created_at"].endswith("+00:00")


def test_session_ids_sort_by_creation_time_and_are_unique(store: SessionStore, tmp_path: Path) -> None:
    ids = []
    for _ in range(5):
        with store.create(tmp_path, "m") as session:
            ids.append(session.id)
    assert len(set(ids)) == 5
    assert all(len(i) == len("20261202-102040-ab12cd") for i in ids)
    assert sorted(ids, key=lambda i: i[:15]) == ids  # timestamp part never goes backwards


def test_every_record_is_fsynced(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = store.create(tmp_path, "m")
    calls: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd))[1])
    session.append_message({"role": "user", "content": "a"})
    session.append_event("usage", prompt_tokens=3)
    session.append_compaction("summary", "m000001")
    session.close()
    assert len(calls) == 3


def test_ids_continue_after_the_highest_id_when_a_session_is_reopened(
    store: SessionStore, tmp_path: Path
) -> None:
    with store.create(tmp_path, "m") as session:
        session.append_message({"role": "user", "content": "a"})
        session.append_message({"role": "assistant", "content": "b"})
        session.append_compaction("sum", "m000001")
    with store.open(session.id) as again:
        assert again.append_message({"role": "user", "content": "c"}) == "m000003"
        assert again.append_compaction("sum2", "m000002") == "c000002"


def test_appending_after_a_truncated_tail_starts_on_a_new_line(store: SessionStore, tmp_path: Path) -> None:
    with store.create(tmp_path, "m") as session:
        session.append_message({"role": "user", "content": "a"})
    with session.path.open("ab") as handle:
        handle.write(b'{"type":"message","id":"m000002","ts":"x","role":"assis')  # crash mid-write
    with store.open(session.id) as again:
        assert again.append_message({"role": "user", "content": "after the crash"}) == "m000002"
    loaded = read_session_file(session.path)
    assert [m.message["content"] for m in loaded.messages] == ["a", "after the crash"]
    assert loaded.corrupt_lines == [3] and not loaded.truncated_tail


def test_existing_bytes_are_never_rewritten(store: SessionStore, tmp_path: Path) -> None:
    with store.create(tmp_path, "m") as session:
        session.append_message({"role": "user", "content": "a"})
        session.append_compaction("s", "m000001")
    before = session.path.read_bytes()
    with store.open(session.id) as again:
        again.append_message({"role": "user", "content": "b"})
        again.append_event("stop", reason="user")
    assert session.path.read_bytes().startswith(before)


def test_a_second_open_in_another_process_is_refused_with_a_clear_message(
    store: SessionStore, tmp_path: Path
) -> None:
    with store.create(tmp_path, "m") as session:
        result = run_python(OPEN_AND_REPORT, str(store.sessions_dir), session.id)
    assert result.stdout.strip() == (
        f"LOCKED: session {session.id} is open in another catbuddy process (pid {os.getpid()}); "
        "close it or use --resume with another id"
    ), result.stderr


def test_a_second_open_in_the_same_process_is_refused(store: SessionStore, tmp_path: Path) -> None:
    with (
        store.create(tmp_path, "m") as session,
        pytest.raises(SessionLocked, match="already open in this catbuddy process"),
    ):
        store.open(session.id)


def test_closing_releases_the_lock_and_is_idempotent(store: SessionStore, tmp_path: Path) -> None:
    session = store.create(tmp_path, "m")
    session.close()
    session.close()
    assert run_python(OPEN_AND_REPORT, str(store.sessions_dir), session.id).stdout.strip() == "OPENED"
    with store.open(session.id) as again:
        assert not again.closed
    assert again.closed


def test_a_killed_holder_never_leaves_a_stale_lock(store: SessionStore, tmp_path: Path) -> None:
    with store.create(tmp_path, "m") as session:
        pass
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
            import sys, time
            from pathlib import Path
            from catbuddy.session.store import SessionStore
            SessionStore(Path(sys.argv[1])).open(sys.argv[2])
            print("ready", flush=True)
            time.sleep(60)
        """),
            str(store.sessions_dir),
            session.id,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(SessionLocked, match=f"another catbuddy process \\(pid {holder.pid}\\)"):
            store.open(session.id)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    with store.open(session.id) as again:
        assert again.append_message({"role": "user", "content": "back"}) == "m000001"


def test_appending_to_a_closed_session_is_an_error(store: SessionStore, tmp_path: Path) -> None:
    session = store.create(tmp_path, "m")
    session.close()
    with pytest.raises(SessionClosed, match="closed"):
        session.append_message({"role": "user", "content": "late"})


def test_a_message_that_cannot_be_stored_writes_nothing(store: SessionStore, tmp_path: Path) -> None:
    with store.create(tmp_path, "m") as session:
        before = session.path.read_bytes()
        with pytest.raises(ValueError, match="role"):
            session.append_message({"content": "no role"})
        with pytest.raises(ValueError, match="may not carry the record field"):
            session.append_message({"role": "user", "content": "x", "id": "mine"})
        with pytest.raises(ValueError, match="JSON-serialisable"):
            session.append_message({"role": "user", "content": object()})
        assert session.path.read_bytes() == before


def test_lone_surrogates_are_stored_as_replacement_characters_and_the_message_matches_the_file(
    store: SessionStore, tmp_path: Path
) -> None:
    message = {"role": "tool", "tool_call_id": "t", "content": "bad byte \udcff from a tool"}
    with store.create(tmp_path, "m") as session:
        session.append_message(message)
    stored = read_session_file(session.path).messages[0].message
    assert stored["content"] == "bad byte \ufffd from a tool"
    assert message == stored  # what the history holds is what the file holds


def test_opening_an_unknown_session_says_how_to_list_sessions(store: SessionStore) -> None:
    with pytest.raises(SessionNotFound, match="catbuddy sessions"):
        store.open("20990101-000000-ffffff")
    with pytest.raises(SessionNotFound, match="not a session id"):
        store.open("../../etc/passwd")


def test_a_unique_prefix_of_an_id_opens_the_session(store: SessionStore, tmp_path: Path) -> None:
    with store.create(tmp_path, "m") as session:
        pass
    with store.open(session.id[:-3]) as again:
        assert again.id == session.id


def test_listing_shows_sessions_newest_first_with_counts_and_the_users_own_words(
    store: SessionStore, tmp_path: Path
) -> None:
    with store.create(tmp_path, "gpt-4o") as older:
        older.append_message(
            {"role": "user", "content": "fix the parser\n\n[runtime: time=2026-01-01 10:00, channel=tui]"}
        )
        older.append_message({"role": "assistant", "content": "done"})
        older.append_event("usage", prompt_tokens=5)
    with store.create(tmp_path, "deepseek-chat") as newer:
        newer.append_message(
            {"role": "user", "content": [{"type": "text", "text": "look\n\n[runtime: time=x]"}]}
        )
    os.utime(older.path, (1_700_000_000, 1_700_000_000))
    infos = store.list()
    assert [i.id for i in infos] == [newer.id, older.id]
    first = infos[1]
    assert first.first_user_message == "fix the parser"
    assert first.message_count == 2
    assert first.model == "gpt-4o"
    assert first.size_bytes == older.path.stat().st_size
    assert first.created_at is not None and first.last_activity.timestamp() == 1_700_000_000
    assert infos[0].first_user_message == "look"
    assert store.latest() == infos[0]


def test_listing_takes_no_lock_and_ignores_torn_lines(store: SessionStore, tmp_path: Path) -> None:
    with store.create(tmp_path, "m") as session:
        session.append_message({"role": "user", "content": "hi"})
        with session.path.open("ab") as handle:
            handle.write(b'{"type":"message","id":"m000002","ts":"x","role":"assis')
        (info,) = store.list()  # works while the session is open and locked
    assert info.message_count == 1
    with store.open(session.id) as again:  # the torn line now sits in the middle of the file
        again.append_message({"role": "assistant", "content": "hello"})
    (info,) = store.list()
    assert info.message_count == 2


def test_latest_can_be_limited_to_a_work_root(store: SessionStore, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with store.create(tmp_path / "a", "m") as in_a:
        pass
    with store.create(tmp_path / "b", "m") as in_b:
        pass
    os.utime(in_a.path, (1_700_000_000, 1_700_000_000))
    assert store.latest().id == in_b.id  # type: ignore[union-attr]
    assert store.latest(tmp_path / "a").id == in_a.id  # type: ignore[union-attr]
    assert store.latest(tmp_path / "c") is None


def test_listing_an_empty_or_missing_directory_gives_nothing(tmp_path: Path) -> None:
    assert SessionStore(tmp_path / "none").list() == []
    assert SessionStore(tmp_path / "none").latest() is None


def test_a_failed_write_does_not_glue_the_next_record_onto_its_remains(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = store.create(tmp_path, "m")
    real_fsync = os.fsync

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        session.append_message({"role": "user", "content": "lost?"})
    with session.path.open("ab") as handle:  # what a short write leaves behind
        handle.truncate(session.path.stat().st_size - 10)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert session.append_message({"role": "user", "content": "after the failure"}) == "m000002"
    session.close()
    loaded = read_session_file(session.path)
    assert [m.message["content"] for m in loaded.messages] == ["after the failure"]
    assert len(loaded.corrupt_lines) == 1


def test_resuming_reads_the_file_once_and_loads_after_an_append_read_it_again(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.create(tmp_path, "m") as session:
        session.append_message({"role": "user", "content": "a"})
    reads: list[Path] = []
    monkeypatch.setattr(
        store_module, "read_session_file", lambda path: reads.append(path) or read_session_file(path)
    )
    with store.open(session.id) as again:
        assert [m.message["content"] for m in again.load().messages] == ["a"]
        assert len(reads) == 1
        again.append_message({"role": "assistant", "content": "b"})
        assert [m.message["content"] for m in again.load().messages] == ["a", "b"]
        assert len(reads) == 2
