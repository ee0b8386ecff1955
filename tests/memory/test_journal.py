"""The entries journal: monotonic cursors, a cursor file beside it, and no trust in the file."""

from __future__ import annotations

import json
import subprocess
import sys

from catbuddy.memory.journal import Journal
from catbuddy.memory.paths import MemoryPaths


def test_entries_get_increasing_cursors_and_every_field(journal: Journal, paths: MemoryPaths) -> None:
    first = journal.append("s1", "session", "User: hi", through="m000002")
    second = journal.append("s1", "compaction", "## Goal\n…", record_id="c000001")
    assert (first.cursor, second.cursor) == (1, 2)
    lines = [json.loads(line) for line in paths.journal.read_text().splitlines()]
    assert set(lines[0]) == {"cursor", "at", "session_id", "kind", "content", "through"}
    assert lines[1]["record_id"] == "c000001" and lines[1]["kind"] == "compaction"


def test_the_journal_lives_under_the_catbuddy_home_never_in_the_repository(workspace, paths) -> None:
    Journal(paths).append("s1", "session", "x")
    assert paths.journal.is_relative_to(workspace.home)
    assert not any(workspace.work_root.rglob("history.jsonl"))


def test_pending_entries_are_those_after_the_cursor(journal: Journal) -> None:
    for n in range(5):
        journal.append("s", "session", f"entry {n}")
    journal.set_cursor(3)
    assert [e.cursor for e in journal.pending().entries] == [4, 5]
    assert journal.pending_count() == 2
    assert journal.cursor() == (3, None)


def test_a_corrupt_line_is_skipped_and_reported_never_fatal(journal: Journal, paths: MemoryPaths) -> None:
    journal.append("s", "session", "one")
    with paths.journal.open("a") as handle:
        handle.write('{"cursor": 2, "content": tru\n')  # torn JSON
        handle.write('["not", "an", "object"]\n')
        handle.write('{"cursor": "three", "content": "x"}\n')
    journal.append("s", "session", "two")
    read = journal.pending()
    assert [e.content for e in read.entries] == ["one", "two"]
    assert [e.cursor for e in read.entries] == [1, 2]
    assert len(read.problems) == 3 and "line 2: skipped, not JSON" in read.problems[0]


def test_an_entry_after_a_torn_last_line_starts_on_its_own_line(journal: Journal, paths: MemoryPaths) -> None:
    journal.append("s", "session", "one")
    with paths.journal.open("a") as handle:
        handle.write('{"cursor": 2, "conte')  # a crash mid-write
    journal.append("s", "session", "two")
    assert [e.content for e in journal.read().entries] == ["one", "two"]


def test_a_cursor_file_that_holds_no_number_reads_as_zero_with_a_problem(journal: Journal, paths) -> None:
    journal.append("s", "session", "one")
    paths.cursor.write_text("banana")
    assert journal.cursor()[0] == 0
    assert "does not hold a number" in journal.pending().problems[0]


def test_cursors_never_repeat_even_when_the_journal_is_emptied_by_hand(journal: Journal, paths) -> None:
    journal.append("s", "session", "one")
    journal.append("s", "session", "two")
    journal.set_cursor(2)
    paths.journal.write_text("")
    assert journal.append("s", "session", "three").cursor == 3


def test_two_processes_appending_at_once_never_share_a_cursor(paths: MemoryPaths) -> None:
    script = (
        "import sys; from pathlib import Path; from catbuddy.memory.journal import Journal; "
        "from catbuddy.memory.paths import MemoryPaths; "
        "j = Journal(MemoryPaths(Path(sys.argv[1]), Path('g'), Path('p')))\n"
        "for i in range(40): j.append('s', 'session', 'x' * 500)"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(paths.root)]) for _ in range(3)]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    cursors = [e.cursor for e in Journal(paths).read().entries]
    assert sorted(cursors) == list(range(1, 121))


def test_the_last_session_entry_of_a_session_is_found(journal: Journal) -> None:
    journal.append("a", "session", "x", through="m000004")
    journal.append("b", "session", "y", through="m000002")
    journal.append("a", "compaction", "z")
    journal.append("a", "session", "w", through="m000009")
    found = journal.last_session_entry("a")
    assert found is not None and found.extra["through"] == "m000009"
    assert journal.last_session_entry("c") is None
